// Package deploy resolves the mesh's registry (platform/mesh) against the deployables' own
// declarations, and writes from them the files that must agree with them: the chart's mesh table
// (routes, export sources, the variables each deployable reads, whose internal ports it reads), its
// values schema and README, the ExportJob CRD it ships, and the Dockerfile with a target per deployable;
// and from tools/monitoring the chart's dashboards, its PrometheusRule and the README's runbooks. make
// generate writes them; a test fails when one is stale.
package deploy

import (
	"errors"
	"fmt"
	"net/http"
	"path"
	"slices"

	"github.com/tidemark/tidemark/operator/settings"
	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/httpapi"
	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/platform/mesh"
	txservice "github.com/tidemark/tidemark/services/tx/service"
	wsservice "github.com/tidemark/tidemark/services/ws/service"
	"github.com/tidemark/tidemark/tools/devstack"
)

// Deployable is one image and one Deployment of the chart (its values block has the same name): a
// row of the mesh's registry.
type Deployable struct {
	mesh.Deployable
}

// variables are what a deployable that is not a kit service reads from its environment, by its kind:
// a kit service's declaration says (kit.Variables).
var variables = map[mesh.Kind]func() []app.Var{
	mesh.Edge:     wsservice.Variables,
	mesh.Operator: settings.Variables,
	mesh.Tx:       txservice.Variables,
}

// Deployables are the mesh's deployables (platform/mesh), in the chart's order.
func Deployables() []Deployable {
	var out []Deployable
	for _, d := range mesh.Deployables() {
		out = append(out, Deployable{d})
	}
	return out
}

// Binary is the deployable's command name: the last element of its main package.
func (d Deployable) Binary() string { return path.Base(d.Main) }

// Component is a deployable as the chart sees it.
type Component struct {
	Deployable
	// Service is its kit declaration; nil when it is not a kit service.
	Service *kit.Service
	Vars    []app.Var
	// Exports are the file types its internal port streams.
	Exports []string
}

// Mesh resolves every deployable of the registry: a kit service's variables and export streams come
// from its declaration in the dev stack's list, which must hold one for each service of the registry
// and agree with the registry's row (prefixes, topics consumed and published, internal routes
// served); the edge's and the tx service's own declarations must agree with their rows too.
func Mesh() ([]Component, error) {
	if err := mesh.Check(); err != nil {
		return nil, err
	}
	byName := map[string]kit.Service{}
	for _, s := range devstack.Services() {
		byName[s.Name] = s
	}
	var out []Component
	for _, d := range Deployables() {
		c := Component{Deployable: d}
		if d.Kind == mesh.Indexer {
			// A kit service whose work is a job: no sinks, series or routes to check, only the
			// topics it writes.
			svc, ok := byName[d.Name]
			if !ok {
				return nil, fmt.Errorf("indexer %s of the registry has no declaration in devstack.Services", d.Name)
			}
			delete(byName, d.Name)
			if !sameSet(d.Publishes, svc.Produces) {
				return nil, fmt.Errorf("%s: the registry (platform/mesh) says publishes %v, its kit declaration produces %v", d.Name, d.Publishes, svc.Produces)
			}
			c.Service, c.Vars = &svc, kit.Variables(svc)
			if err := readsRPC(c); err != nil {
				return nil, err
			}
			out = append(out, c)
			continue
		}
		if d.Kind != mesh.Service {
			vars, ok := variables[d.Kind]
			if !ok {
				return nil, fmt.Errorf("deployable %s: no variables declared for its kind %s", d.Name, d.Kind)
			}
			c.Vars = vars()
			if err := readsRPC(c); err != nil {
				return nil, err
			}
			out = append(out, c)
			continue
		}
		svc, ok := byName[d.Name]
		if !ok {
			return nil, fmt.Errorf("service %s of the registry has no declaration in devstack.Services", d.Name)
		}
		delete(byName, d.Name)
		c.Service = &svc
		c.Vars = kit.Variables(svc)
		parts, err := svc.Build(kit.Deps{Schema: cmpOr(svc.Schema, svc.Name)})
		if err != nil {
			return nil, fmt.Errorf("%s: declare its parts: %w", svc.Name, err)
		}
		if err := agrees(d.Deployable, svc, parts); err != nil {
			return nil, err
		}
		c.Exports = fileTypes(parts)
		out = append(out, c)
	}
	for name := range byName {
		return nil, fmt.Errorf("service %s runs in the dev stack but is not in the registry (platform/mesh)", name)
	}
	edge, _ := mesh.Lookup(wsservice.Name)
	if !sameSet(edge.Prefixes, wsservice.Prefixes()) || !sameSet(edge.Consumes, wsservice.Topics()) {
		return nil, fmt.Errorf("ws: the registry says prefixes %v and topics %v, the edge declares %v and %v",
			edge.Prefixes, edge.Consumes, wsservice.Prefixes(), wsservice.Topics())
	}
	if tx, _ := mesh.Lookup(txservice.Name); !sameSet(tx.Prefixes, txservice.Prefixes()) {
		return nil, fmt.Errorf("tx: the registry says prefixes %v, the service declares %v", tx.Prefixes, txservice.Prefixes())
	}
	return out, nil
}

// readsRPC reports a deployable that reads the chain but not the variables the chart names after
// it: its endpoint would be set under names it never reads.
func readsRPC(c Component) error {
	url, headers, ok := RPCVariables(c.Deployable.Deployable)
	if !ok {
		return nil
	}
	if !slices.ContainsFunc(c.Vars, func(v app.Var) bool { return v.Name == url }) ||
		!slices.ContainsFunc(c.Vars, func(v app.Var) bool { return v.Name == headers }) {
		return fmt.Errorf("%s reads the chain but not %s and %s, which the chart sets from its rpc values", c.Name, url, headers)
	}
	return nil
}

// agrees reports where the registry's row d and the service's own declaration differ: the registry
// is what the chart and the docs are made of, the declaration is what runs.
func agrees(d mesh.Deployable, svc kit.Service, parts kit.Parts) error {
	var consumes []string
	for _, s := range parts.Sinks {
		consumes = append(consumes, s.Topic())
	}
	var errs []error
	check := func(what string, registry, declared []string) {
		if !sameSet(registry, declared) {
			errs = append(errs, fmt.Errorf("%s: the registry (platform/mesh) says %s %v, its kit declaration %v", d.Name, what, registry, declared))
		}
	}
	check("prefixes", d.Prefixes, svc.Prefixes)
	check("consumes", d.Consumes, consumes)
	check("publishes", d.Publishes, svc.Publishes)
	// Each internal route the registry says it serves is registered on its internal port.
	internal := httpapi.New(httpapi.Options{})
	if parts.Internal != nil {
		parts.Internal(internal)
	}
	for _, r := range d.Serves {
		req, err := http.NewRequest(http.MethodGet, r, nil)
		if err != nil || !internal.Serves(req) {
			errs = append(errs, fmt.Errorf("%s: the registry says it serves %s, its internal routes do not", d.Name, r))
		}
	}
	return errors.Join(errs...)
}

func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// fileTypes are the export file types of the parts' series. Build only declares the parts (it runs no
// query), so Mesh calls it without a database.
func fileTypes(parts kit.Parts) []string {
	var out []string
	for _, s := range parts.Series {
		if s.Export != nil {
			out = append(out, s.Export.FileType)
		}
	}
	return out
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
