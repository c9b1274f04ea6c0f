package deploy

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/template"

	"gopkg.in/yaml.v3"

	"github.com/tidemark/tidemark/platform/mesh"
	"github.com/tidemark/tidemark/tools/monitoring"
)

// ValueDoc is a documented key of values.yaml: a key whose comment starts with "# --" (helm-docs'
// convention), the keys under it included in its default.
type ValueDoc struct {
	Key, Type, Default, Description string
}

// ValueDocs reads the documented keys of values.yaml in order. Every key is documented, itself or
// through a parent: an undocumented leaf is an error.
func ValueDocs(values []byte) ([]ValueDoc, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(values, &doc); err != nil {
		return nil, fmt.Errorf("values.yaml: %w", err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("values.yaml: not a mapping")
	}
	var out []ValueDoc
	err := walk(doc.Content[0], "", &out)
	return out, err
}

func walk(m *yaml.Node, prefix string, out *[]ValueDoc) error {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		key := prefix + k.Value
		if desc, ok := description(k.HeadComment); ok {
			var val any
			if err := v.Decode(&val); err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			b, err := json.Marshal(val)
			if err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			*out = append(*out, ValueDoc{Key: key, Type: typeOf(val), Default: string(b), Description: desc})
			continue
		}
		if v.Kind != yaml.MappingNode {
			return fmt.Errorf("values.yaml: %s has no `# --` description", key)
		}
		if err := walk(v, key+".", out); err != nil {
			return err
		}
	}
	return nil
}

// description is the text after "# --" in a key's head comment, with the comment lines after it.
func description(comment string) (string, bool) {
	var parts []string
	found := false
	for _, l := range strings.Split(comment, "\n") {
		l = strings.TrimSpace(l)
		if rest, ok := strings.CutPrefix(l, "# --"); ok {
			found, parts = true, []string{strings.TrimSpace(rest)}
			continue
		}
		if found {
			parts = append(parts, strings.TrimSpace(strings.TrimPrefix(l, "#")))
		}
	}
	return strings.Join(parts, " "), found
}

func typeOf(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case int, int64, uint64:
		return "int"
	case float64:
		return "float"
	case bool:
		return "bool"
	case []any:
		return "list"
	default:
		return "object"
	}
}

//go:embed readme.md.tmpl
var readmeTemplate string

func readme(values []byte, comps []Component) ([]byte, error) {
	docs, err := ValueDocs(values)
	if err != nil {
		return nil, err
	}
	t, err := template.New("README.md").Funcs(template.FuncMap{
		"cell":       func(s string) string { return strings.ReplaceAll(s, "|", "\\|") },
		"configKey":  ConfigKey,
		"managedBy":  ManagedBy,
		"isManaged":  func(name string) bool { return ManagedBy(name) != "" },
		"joinRoutes": joinRoutes,
		"acls":       aclSummary,
	}).Parse(readmeTemplate)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	err = t.Execute(&buf, map[string]any{"Values": docs, "Components": comps, "Topics": topicRows(comps),
		"Dashboards": monitoring.Dashboards(), "Alerts": monitoring.Alerts()})
	return buf.Bytes(), err
}

func joinRoutes(component string) string {
	var ps []string
	for _, r := range Routes() {
		if r.Component == component {
			ps = append(ps, "`"+r.Path+"`")
		}
	}
	if len(ps) == 0 {
		return "none"
	}
	return strings.Join(ps, ", ")
}

// topicRow is a row of the README's table of topics.
type topicRow struct {
	Name, Retention, ReadBy, WrittenBy string
}

// topicRows are the mesh's declared topics with who reads and who writes each.
func topicRows(comps []Component) []topicRow {
	var out []topicRow
	for _, s := range mesh.TopicSpecs(mesh.TopicPlan{Partitions: 1, ReplicationFactor: 1}) {
		r := topicRow{Name: s.Name, Retention: "forever"}
		if s.Retention > 0 {
			r.Retention = fmt.Sprintf("%dd", int(s.Retention.Hours()/24))
		}
		var readers, writers []string
		for _, c := range comps {
			for _, a := range c.ACLs() {
				if a.Resource != "topic" || a.Name != s.Name {
					continue
				}
				if slices.Contains(a.Operations, "Read") {
					readers = append(readers, "`"+c.Name+"`")
				}
				if slices.Contains(a.Operations, "Write") {
					writers = append(writers, "`"+c.Name+"`")
				}
			}
		}
		r.ReadBy, r.WrittenBy = listOr(readers, "(the team)"), listOr(writers, "the producers of protocol events")
		out = append(out, r)
	}
	return out
}

func listOr(l []string, none string) string {
	if len(l) == 0 {
		return none
	}
	return strings.Join(l, ", ")
}

// aclSummary is c's ACLs grouped by resource and operations: "Read, Describe on topics `a`, `b`".
func aclSummary(c Component) string {
	var keys []string
	names := map[string][]string{}
	for _, a := range c.ACLs() {
		k := strings.Join(a.Operations, ", ") + " on " + a.Resource + "s"
		if _, ok := names[k]; !ok {
			keys = append(keys, k)
		}
		names[k] = append(names[k], "`"+a.Name+"`")
	}
	if len(keys) == 0 {
		return "none (no Kafka)"
	}
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + " " + strings.Join(names[k], ", ")
	}
	return strings.Join(parts, "; ")
}
