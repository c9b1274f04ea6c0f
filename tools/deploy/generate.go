package deploy

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/tidemark/tidemark/tools/images"
	"github.com/tidemark/tidemark/tools/monitoring"
)

// ChartDir is the chart, relative to the repository root.
const ChartDir = "charts/tidemark"

// DashboardsDir holds the chart's Grafana dashboards (tools/monitoring), one JSON file each, which
// templates/dashboards.yaml turns into ConfigMaps.
const DashboardsDir = ChartDir + "/files/dashboards"

// crdDir is where the operator's CRD is generated (make generate, controller-gen).
const crdDir = "operator/config/crd"

// Root is the repository root: the nearest folder above the working directory with a go.work.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("deploy: no go.work above the working directory")
		}
		dir = parent
	}
}

// Files are the generated files by path relative to root, with their contents.
func Files(root string) (map[string][]byte, error) {
	comps, err := Mesh()
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	if out[ChartDir+"/files/mesh.yaml"], err = meshYAML(comps); err != nil {
		return nil, err
	}
	crds, err := filepath.Glob(filepath.Join(root, crdDir, "*.yaml"))
	if err != nil || len(crds) == 0 {
		return nil, fmt.Errorf("no CRD under %s: %v", crdDir, err)
	}
	for _, p := range crds {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		out[ChartDir+"/files/crds/"+filepath.Base(p)] = b
	}
	for _, d := range monitoring.Dashboards() {
		if out[DashboardsDir+"/"+d.UID+".json"], err = d.JSON(); err != nil {
			return nil, fmt.Errorf("dashboard %s: %w", d.UID, err)
		}
	}
	if out[ChartDir+"/templates/prometheusrule.yaml"], err = monitoring.RuleTemplate(monitoring.Alerts()); err != nil {
		return nil, err
	}
	if out[ChartDir+"/values.schema.json"], err = valuesSchema(comps); err != nil {
		return nil, err
	}
	values, err := os.ReadFile(filepath.Join(root, ChartDir, "values.yaml"))
	if err != nil {
		return nil, err
	}
	if out[ChartDir+"/README.md"], err = readme(values, comps); err != nil {
		return nil, err
	}
	ds := make([]Deployable, len(comps))
	for i, c := range comps {
		ds[i] = c.Deployable
	}
	license, err := images.License(root)
	if err != nil {
		return nil, err
	}
	if out["Dockerfile"], err = Dockerfile(ds, license); err != nil {
		return nil, err
	}
	return out, nil
}

// Stale are the generated files under root that Files no longer makes: the chart's copies of CRDs
// the operator no longer has, and dashboards tools/monitoring no longer declares.
func Stale(root string, files map[string][]byte) []string {
	crds, _ := filepath.Glob(filepath.Join(root, ChartDir, "files/crds/*.yaml"))
	dashboards, _ := filepath.Glob(filepath.Join(root, DashboardsDir, "*.json"))
	var out []string
	for _, p := range append(crds, dashboards...) {
		rel, _ := filepath.Rel(root, p)
		if _, ok := files[filepath.ToSlash(rel)]; !ok {
			out = append(out, p)
		}
	}
	return out
}

// Write writes Files under root, and removes the Stale ones.
func Write(root string) error {
	files, err := Files(root)
	if err != nil {
		return err
	}
	for _, p := range Stale(root, files) {
		if err := os.Remove(p); err != nil {
			return err
		}
	}
	for _, p := range slices.Sorted(maps.Keys(files)) {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, files[p], 0o644); err != nil {
			return err
		}
	}
	return nil
}

//go:embed schema.yaml
var schemaBase []byte

// valuesSchema is the base schema with a closed property per deployable, whose config lists exactly
// the variables it reads that the chart does not set, and defaults, whose config lists all of them.
func valuesSchema(comps []Component) ([]byte, error) {
	var s map[string]any
	if err := yaml.Unmarshal(schemaBase, &s); err != nil {
		return nil, fmt.Errorf("schema.yaml: %w", err)
	}
	defs := s["definitions"].(map[string]any)
	props := s["properties"].(map[string]any)
	component := defs["component"]
	delete(defs, "component")
	all := map[string]any{}
	for _, c := range comps {
		config := map[string]any{}
		for _, v := range c.Configurable() {
			config[ConfigKey(v)] = variableSchema(v.Name, v.Default)
			all[ConfigKey(v)] = variableSchema(v.Name, v.Default)
		}
		props[c.Name] = withConfig(component, config, fmt.Sprintf("The %s deployable, merged over defaults.", c.Name))
	}
	props["defaults"] = withConfig(component, all, "What every deployable's block is merged over.")
	var alerts []any
	for _, a := range monitoring.Alerts() {
		alerts = append(alerts, a.Name)
	}
	rule := props["prometheusRule"].(map[string]any)["properties"].(map[string]any)
	rule["disabled"] = map[string]any{"type": "array", "uniqueItems": true, "items": map[string]any{"enum": alerts}}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func variableSchema(name, def string) map[string]any {
	d := name
	if def != "" {
		d += " (default " + def + ")"
	}
	return map[string]any{"type": []any{"string", "number", "boolean"}, "description": d}
}

// withConfig is a deep copy of the component schema with its config closed over config.
func withConfig(component any, config map[string]any, description string) map[string]any {
	b, _ := json.Marshal(component)
	var c map[string]any
	_ = json.Unmarshal(b, &c)
	c["description"] = description
	c["properties"].(map[string]any)["config"] = map[string]any{
		"type": "object", "additionalProperties": false, "properties": config,
		"description": "TIDEMARK_* variables by name without the prefix.",
	}
	return c
}
