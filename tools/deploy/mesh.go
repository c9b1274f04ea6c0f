package deploy

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/mesh"
)

// Managed are the variables the chart sets from its own values (charts/tidemark/templates/lib/env.tpl),
// with the values that set them; a deployable's block sets each other variable it reads through its
// config.
var Managed = map[string]string{
	"TIDEMARK_PG_URL":                "`global.postgres`, or the deployable's `database`",
	"TIDEMARK_KAFKA_BROKERS":         "`global.kafka.brokers`",
	"TIDEMARK_KAFKA_TOPIC_PREFIX":    "`global.kafka.topicPrefix`",
	"TIDEMARK_KAFKA_GROUP_PREFIX":    "`global.kafka.groupPrefix`",
	"TIDEMARK_KAFKA_TLS":             "`global.kafka.tls.enabled`",
	"TIDEMARK_KAFKA_TLS_CA_FILE":     "`global.kafka.tls.existingSecret` (its `ca.crt`, mounted)",
	"TIDEMARK_KAFKA_TLS_CERT_FILE":   "`global.kafka.tls.clientCertificate` (`tls.crt` of the Secret, mounted)",
	"TIDEMARK_KAFKA_TLS_KEY_FILE":    "`global.kafka.tls.clientCertificate` (`tls.key` of the Secret, mounted)",
	"TIDEMARK_KAFKA_TLS_SERVER_NAME": "`global.kafka.tls.serverName`",
	"TIDEMARK_KAFKA_SASL_MECHANISM":  "`global.kafka.sasl.mechanism`",
	"TIDEMARK_KAFKA_SASL_USERNAME":   "`global.kafka.sasl.existingSecret`",
	"TIDEMARK_KAFKA_SASL_PASSWORD":   "`global.kafka.sasl.existingSecret`",
	"TIDEMARK_KAFKA_AWS_REGION":      "`global.kafka.sasl.awsRegion`",
	"TIDEMARK_PAGE_KEY":              "`global.pageKey`",
	"TIDEMARK_PUBLIC_ADDR":           "`ports.public`",
	"TIDEMARK_INTERNAL_ADDR":         "`ports.internal`",
	"TIDEMARK_LOG_LEVEL":             "`logLevel`, else `global.logLevel`",
	"TIDEMARK_OTLP_ENDPOINT":         "`global.otlpEndpoint`",
	"TIDEMARK_NAMESPACE":             "the release's namespace",
	"TIDEMARK_EXPORT_SOURCES":        "the enabled deployables' export streams (`files/mesh.yaml`)",
	"TIDEMARK_S3_ENDPOINT":           "`global.s3.endpoint`",
	"TIDEMARK_S3_BUCKET":             "`global.s3.bucket`",
	"TIDEMARK_S3_REGION":             "`global.s3.region`",
	"TIDEMARK_S3_TLS":                "`global.s3.tls`",
	"TIDEMARK_S3_PUBLIC_URL":         "`global.s3.publicURL`",
	"TIDEMARK_S3_ACCESS_KEY":         "`global.s3.accessKey`, or `global.s3.existingSecret`",
	"TIDEMARK_S3_SECRET_KEY":         "`global.s3.secretKey`, or `global.s3.existingSecret`",
	"TIDEMARK_S3_STS_ENDPOINT":       "`global.s3.stsEndpoint`",
	"TIDEMARK_S3_SESSION_DURATION":   "`global.s3.sessionDuration`",
}

// chainKinds are the kinds of deployable that read the chain over JSON-RPC: each reads
// <NAME>_RPC_URL and <NAME>_RPC_HEADERS (RPCVariables), which the chart sets from its block's rpc
// values through one template (tidemark.rpcPrefix).
var chainKinds = []mesh.Kind{mesh.Indexer, mesh.Tx}

// RPCVariables are the endpoint's URL and headers variables of a deployable that reads the chain,
// as the chart names them from its name; none for another.
func RPCVariables(d mesh.Deployable) (url, headers string, ok bool) {
	if !slices.Contains(chainKinds, d.Kind) {
		return "", "", false
	}
	p := app.EnvPrefix + strings.ToUpper(strings.ReplaceAll(d.Name, "-", "_")) + "_RPC_"
	return p + "URL", p + "HEADERS", true
}

// exportSources is the variable naming the export streams' internal URLs: a deployable that reads it
// reaches every deployable with export streams.
const exportSources = "TIDEMARK_EXPORT_SOURCES"

// AllManaged are Managed, the upstream URLs of InternalURLs and the RPCVariables of the deployables
// that read the chain, with what sets each.
func AllManaged() map[string]string {
	out := maps.Clone(Managed)
	for name, upstream := range InternalURLs() {
		out[name] = "the " + upstream + " deployable's internal port, when it is enabled"
	}
	for _, d := range mesh.Deployables() {
		if url, headers, ok := RPCVariables(d); ok {
			out[url] = "`rpc.url`, or `rpc.existingSecret` (its `rpc.urlKey`)"
			out[headers] = "`rpc.headers`, or `rpc.existingSecret` (its `rpc.headersKey`, when it has one)"
		}
	}
	return out
}

// ManagedBy is what in the chart sets the variable name; "" for one the chart does not manage.
func ManagedBy(name string) string { return AllManaged()[name] }

// InternalURLs are the managed variables that hold another deployable's internal base URL, by the
// deployable they name, for every deployable of the registry that reads internal routes: the chart
// points each at the upstream's Service in the release.
func InternalURLs() map[string]string {
	out := map[string]string{}
	for _, d := range mesh.Deployables() {
		for _, u := range d.Upstreams() {
			out[app.EnvPrefix+d.UpstreamVariable(u)] = u
		}
	}
	return out
}

// Configurable are the variables of c that its values block sets through config, by name without
// the prefix.
func (c Component) Configurable() []app.Var {
	var out []app.Var
	for _, v := range c.Vars {
		if ManagedBy(v.Name) == "" {
			out = append(out, v)
		}
	}
	return out
}

// ConfigKey is v's key in a values block's config.
func ConfigKey(v app.Var) string { return strings.TrimPrefix(v.Name, app.EnvPrefix) }

// Route is a row of the chart's routing table.
type Route struct {
	Path      string `yaml:"path"`
	PathType  string `yaml:"pathType"`
	Component string `yaml:"component"`
}

// Routes are the registry's public routes (platform/mesh) as Ingress paths: the dev stack's router
// reads the same table.
func Routes() []Route {
	var out []Route
	for _, r := range mesh.Routes() {
		t := "Prefix"
		if r.Exact {
			t = "Exact"
		}
		out = append(out, Route{Path: r.Prefix, PathType: t, Component: r.Deployable})
	}
	return out
}

type meshComponent struct {
	Name string `yaml:"name"`
	Kind string `yaml:"kind"`
	// Exports are the file types its internal port streams.
	Exports []string `yaml:"exports"`
	// Reads are the variables it reads.
	Reads []string `yaml:"reads"`
	// Upstreams are the deployables whose internal routes it reads.
	Upstreams []string `yaml:"upstreams"`
	// Peers are the deployables whose internal ports its NetworkPolicy lets it reach, and only them:
	// its upstreams, and every deployable with export streams for one that reads them.
	Peers     []string `yaml:"peers"`
	Consumes  []string `yaml:"consumes"`
	Publishes []string `yaml:"publishes"`
}

type meshFile struct {
	Managed      map[string]string `yaml:"managed"`
	InternalURLs map[string]string `yaml:"internalURLs"`
	Routes       []Route           `yaml:"routes"`
	Components   []meshComponent   `yaml:"components"`
}

// meshYAML is charts/tidemark/files/mesh.yaml: what the templates read of the deployables.
func meshYAML(comps []Component) ([]byte, error) {
	f := meshFile{Managed: AllManaged(), InternalURLs: InternalURLs(), Routes: Routes()}
	names := map[string]bool{}
	var exporters []string
	for _, c := range comps {
		if len(c.Exports) > 0 {
			exporters = append(exporters, c.Name)
		}
	}
	for _, c := range comps {
		names[c.Name] = true
		mc := meshComponent{Name: c.Name, Kind: string(c.Kind), Exports: list(c.Exports), Reads: []string{},
			Upstreams: list(c.Upstreams()), Consumes: list(c.Consumes), Publishes: list(c.Publishes)}
		mc.Peers = slices.Clone(mc.Upstreams)
		for _, v := range c.Vars {
			mc.Reads = append(mc.Reads, v.Name)
			if v.Name == exportSources {
				mc.Peers = append(mc.Peers, exporters...)
			}
		}
		slices.Sort(mc.Peers)
		mc.Peers = slices.Compact(mc.Peers)
		f.Components = append(f.Components, mc)
	}
	for _, r := range f.Routes {
		if !names[r.Component] {
			return nil, fmt.Errorf("route %s: %s is not a deployable", r.Path, r.Component)
		}
	}
	var buf bytes.Buffer
	buf.WriteString("# Generated by make generate (tools/deploy) from the mesh's registry (platform/mesh) and the deployables'\n" +
		"# declarations: the routing table of the edge (the dev stack's router reads the same), each deployable's\n" +
		"# kind, export streams, the variables it reads, whose internal routes it reads and its topics. Do not edit.\n")
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return nil, err
	}
	return buf.Bytes(), enc.Close()
}

// list is l, or an empty list where l is nil: the chart reads a list either way.
func list(l []string) []string {
	if l == nil {
		return []string{}
	}
	return slices.Clone(l)
}
