// Package deploy describes what is deployed, and writes from those declarations the files that must
// agree with them: the chart's mesh table (routes, export sources, the variables each deployable
// reads), its values schema and README, the ExportJob CRD it ships, and a Dockerfile per deployable.
// make generate writes them; a test fails when one is stale.
package deploy

import (
	"fmt"
	"path"
	"strings"

	"github.com/tidemark/tidemark/operator/settings"
	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/kit"
	wsservice "github.com/tidemark/tidemark/services/ws/service"
	"github.com/tidemark/tidemark/tools/devstack"
)

// Deployable is one image and one Deployment of the chart (its values block has the same name).
type Deployable struct {
	Name string
	// Main is its main package, relative to the repository root.
	Main string
	// Variables lists what it reads from its environment; nil for a kit service, whose declaration
	// in devstack.Services says (kit.Variables).
	Variables func() []app.Var
}

// deployables are the mesh's images and Deployments: adding one is a line here and a values block in
// charts/tidemark/values.yaml (a kit service is also a line in devstack.Services, where its routes,
// export streams and variables are read from).
var deployables = []Deployable{
	{Name: "market", Main: "./services/market/cmd/market"},
	{Name: "user", Main: "./services/user/cmd/user"},
	{Name: "authority", Main: "./services/authority/cmd/authority"},
	{Name: "amm", Main: "./services/amm/cmd/amm"},
	{Name: "notify", Main: "./services/notify/cmd/notify"},
	{Name: "stats", Main: "./services/stats/cmd/stats"},
	{Name: "ws", Main: "./services/ws/cmd/ws", Variables: wsservice.Variables},
	{Name: "operator", Main: "./operator/cmd/operator", Variables: settings.Variables},
}

// Deployables are the mesh's deployables, in the chart's order.
func Deployables() []Deployable { return append([]Deployable(nil), deployables...) }

// Binary is the deployable's command name: the last element of its main package.
func (d Deployable) Binary() string { return path.Base(d.Main) }

// ModuleDir is the folder of the deployable's module (where its Dockerfile lives), relative to the
// repository root: its main package without cmd/<binary>.
func (d Deployable) ModuleDir() string {
	return strings.TrimPrefix(path.Dir(path.Dir(d.Main)), "./")
}

// Component is a deployable as the chart sees it.
type Component struct {
	Deployable
	// Service is its kit declaration; nil when it is not a kit service.
	Service *kit.Service
	Vars    []app.Var
	// Exports are the file types its internal port streams.
	Exports []string
}

// Mesh resolves every deployable against the dev stack's services: a kit service's variables and
// export streams come from its declaration. A service the dev stack runs must be deployed, and a
// deployable without its own Variables must be one of the dev stack's services.
func Mesh() ([]Component, error) {
	services := devstack.Services()
	byName := map[string]kit.Service{}
	for _, s := range services {
		byName[s.Name] = s
	}
	var out []Component
	deployed := map[string]bool{}
	for _, d := range deployables {
		deployed[d.Name] = true
		c := Component{Deployable: d}
		if d.Variables != nil {
			c.Vars = d.Variables()
			out = append(out, c)
			continue
		}
		svc, ok := byName[d.Name]
		if !ok {
			return nil, fmt.Errorf("deployable %s: no service of that name in devstack.Services and no Variables of its own", d.Name)
		}
		c.Service = &svc
		c.Vars = kit.Variables(svc)
		exports, err := fileTypes(svc)
		if err != nil {
			return nil, err
		}
		c.Exports = exports
		out = append(out, c)
	}
	for _, s := range services {
		if !deployed[s.Name] {
			return nil, fmt.Errorf("service %s runs in the dev stack but is not in deploy's deployables", s.Name)
		}
	}
	return out, nil
}

// fileTypes are the export file types svc's series declare. Build only declares its parts (it runs
// no query), so it is called here without a database.
func fileTypes(svc kit.Service) ([]string, error) {
	parts, err := svc.Build(kit.Deps{Schema: cmpOr(svc.Schema, svc.Name)})
	if err != nil {
		return nil, fmt.Errorf("%s: declare its parts: %w", svc.Name, err)
	}
	var out []string
	for _, s := range parts.Series {
		if s.Export != nil {
			out = append(out, s.Export.FileType)
		}
	}
	return out, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
