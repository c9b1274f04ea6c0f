// Package txroutes holds the tests of the tx service (services/tx) against the simulated chain
// (tools/simchain) and the protocol's official SDK (tools/sdkdiff): they live in the tools module
// because the service's own module must not depend on the tools that exercise it.
package txroutes
