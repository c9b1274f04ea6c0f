// Package txroutes is the tx service (services/tx) on a simulated chain (tools/simchain), for the
// tests that exercise its routes and the tools that sign what it builds: World starts both. The
// tests live here, in the tools module, because the service's own module must not depend on the
// tools that exercise it.
package txroutes
