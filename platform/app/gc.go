package app

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// DefaultGOGC is the garbage collector's target of every deployable when the environment sets no
// GOGC (Go's own default is 100).
//
// A consumer's batches are thousands of decoded messages that live until their transaction
// commits and then all die: at a target of 100 the collector runs every few megabytes of them, on
// the cores the consumer shares with everything else of the pod. A target of 400 collects a fifth as often for a heap up to five times the live one, which
// for a batch-sized live heap is tens of megabytes. A memory limit bounds the trade (TuneGC).
const DefaultGOGC = 400

// memoryLimitShare is the part of the container's memory limit the Go heap may grow to before the
// collector runs harder: the rest is the runtime's own memory, stacks and the kernel's buffers.
const memoryLimitShare = 0.9

// cgroupMemoryFiles hold the container's memory limit: cgroup v2, then v1.
var cgroupMemoryFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// TuneGC sets the collector's target to DefaultGOGC unless GOGC is set in the environment, and a soft
// memory limit of 90% of the container's memory limit unless GOMEMLIMIT is (the Go runtime has
// applied both variables already). Without a container limit the heap is bounded by GOGC alone.
// Every deployable's main calls it first thing.
func TuneGC() { tuneGC(os.LookupEnv, cgroupMemoryFiles) }

func tuneGC(lookup func(string) (string, bool), limitFiles []string) {
	if _, ok := lookup("GOGC"); !ok {
		debug.SetGCPercent(DefaultGOGC)
	}
	if _, ok := lookup("GOMEMLIMIT"); !ok {
		if limit, ok := containerMemoryLimit(limitFiles); ok {
			debug.SetMemoryLimit(int64(float64(limit) * memoryLimitShare))
		}
	}
}

// containerMemoryLimit reads the first of files that holds a limit in bytes; cgroup v2 writes "max"
// and v1 a huge number when there is none.
func containerMemoryLimit(files []string) (int64, bool) {
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n <= 0 || n >= 1<<60 {
			return 0, false
		}
		return n, true
	}
	return 0, false
}
