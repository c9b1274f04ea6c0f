package monitoring

import (
	"bytes"
	"encoding/json"
)

// Grafana's layout: a grid 24 wide; each panel is half of it, and rows stack.
const (
	gridWidth   = 24
	panelWidth  = 12
	panelHeight = 8
)

// datasource is the dashboards' data source: a variable, so that one JSON serves any Prometheus.
var datasource = map[string]string{"type": "prometheus", "uid": "${datasource}"}

// JSON is the dashboard as Grafana imports it (and its sidecar loads it from a ConfigMap).
func (d Dashboard) JSON() ([]byte, error) {
	vars := []any{map[string]any{
		"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
		"current": map[string]any{}, "hide": 0, "refresh": 1, "regex": "", "includeAll": false, "multi": false,
	}}
	for _, v := range d.Vars {
		q := "label_values(" + v.Metric + ", " + v.Label + ")"
		m := map[string]any{
			"name": v.Name, "label": v.Name, "type": "query", "datasource": datasource,
			"definition": q, "query": map[string]any{"query": q, "refId": "PrometheusVariableQueryEditor-VariableQuery"},
			"current": map[string]any{}, "hide": 0, "refresh": 2, "sort": 1, "regex": "",
			"includeAll": v.Multi, "multi": v.Multi,
		}
		if v.Multi {
			m["allValue"] = ".+"
		}
		vars = append(vars, m)
	}
	var panels []any
	id, y := 1, 0
	for _, r := range d.Rows {
		panels = append(panels, map[string]any{
			"id": id, "type": "row", "title": r.Title, "collapsed": false, "panels": []any{},
			"gridPos": map[string]int{"h": 1, "w": gridWidth, "x": 0, "y": y},
		})
		id++
		y++
		for i, p := range r.Panels {
			x := (i % (gridWidth / panelWidth)) * panelWidth
			if i > 0 && x == 0 {
				y += panelHeight
			}
			panels = append(panels, p.json(id, x, y))
			id++
		}
		if len(r.Panels) > 0 {
			y += panelHeight
		}
	}
	out := map[string]any{
		"uid": d.UID, "title": d.Title, "description": d.Description, "tags": []string{"tidemark"},
		"schemaVersion": 39, "version": 1, "editable": true, "graphTooltip": 1, "refresh": "30s",
		"time": map[string]string{"from": "now-6h", "to": "now"}, "timezone": "",
		"templating":  map[string]any{"list": vars},
		"annotations": map[string]any{"list": []any{}}, "links": []any{},
		"panels": panels,
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	err := enc.Encode(out)
	return buf.Bytes(), err
}

func (p Panel) json(id, x, y int) map[string]any {
	kind := p.Kind
	if kind == "" {
		kind = TimeSeries
	}
	var targets []any
	for i, q := range p.Queries {
		targets = append(targets, map[string]any{
			"refId": string(rune('A' + i)), "expr": q.Expr, "legendFormat": q.Legend, "datasource": datasource,
		})
	}
	defaults := map[string]any{"unit": p.Unit}
	options := map[string]any{
		"legend":  map[string]any{"displayMode": "list", "placement": "bottom", "showLegend": true},
		"tooltip": map[string]any{"mode": "multi", "sort": "desc"},
	}
	if kind == Stat {
		// A stat of readiness: red below 1, green at 1.
		defaults["thresholds"] = map[string]any{"mode": "absolute", "steps": []any{
			map[string]any{"color": "red", "value": nil}, map[string]any{"color": "green", "value": 1},
		}}
		options = map[string]any{"colorMode": "background", "graphMode": "none", "textMode": "value_and_name",
			"reduceOptions": map[string]any{"calcs": []string{"lastNotNull"}, "fields": "", "values": false}}
	}
	return map[string]any{
		"id": id, "type": string(kind), "title": p.Title, "description": p.Description, "datasource": datasource,
		"gridPos":     map[string]int{"h": panelHeight, "w": panelWidth, "x": x, "y": y},
		"fieldConfig": map[string]any{"defaults": defaults, "overrides": []any{}},
		"options":     options, "targets": targets,
	}
}
