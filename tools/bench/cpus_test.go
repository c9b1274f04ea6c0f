package bench_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

var cpuTopology = flag.String("bench.cpus", "shared",
	"the ingest comparisons' CPUs: shared (Postgres and this process on all of them) or split (Postgres on one half, this process on the other)")

// splitCPUs, with -bench.cpus=split, gives Postgres one half of this process' CPUs and this process
// (the service under test, its embedded broker, the baseline's COPY client) the other, until b ends;
// it returns which topology holds, for the RESULT lines.
//
// The ingest targets were set with the machine shared, as it is by default: every µs the consumer
// spends is then a µs taken from the database, while the baseline leaves Postgres both CPUs. Deployed,
// Postgres has machines of its own and the service's work never takes their cores, but a service
// instance has a CPU budget of its own too. Split models that: whether one service instance keeps its
// database fed, each on half of the machine. Neither is the deployment; the two show how far a
// ratio depends on where the CPU goes.
func splitCPUs(b *testing.B) (topology string) {
	b.Helper()
	switch *cpuTopology {
	case "shared":
		return "Postgres and this process sharing the CPUs"
	case "split":
	default:
		b.Fatalf("-bench.cpus must be shared or split, got %q", *cpuTopology)
	}
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		b.Fatalf("read this process' CPUs: %v", err)
	}
	var cpus []int
	for c := range 1024 {
		if all.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	if len(cpus) < 2 {
		return "Postgres and this process sharing 1 CPU (too few to split)"
	}
	var db, self unix.CPUSet
	half := len(cpus) / 2
	for _, c := range cpus[:half] {
		db.Set(c)
	}
	for _, c := range cpus[half:] {
		self.Set(c)
	}
	// The Go scheduler runs as many threads as this half has CPUs, as in a container of that size.
	prevProcs := runtime.GOMAXPROCS(min(runtime.GOMAXPROCS(0), self.Count()))
	b.Cleanup(func() { // first, so that a failure below still undoes what was done
		runtime.GOMAXPROCS(prevProcs)
		if err := pinSelf(&all); err != nil {
			b.Errorf("unpin this process: %v", err)
		}
		if err := pinPostgres(&all); err != nil {
			b.Errorf("unpin Postgres: %v", err)
		}
	})
	if err := pinPostgres(&db); err != nil {
		b.Fatalf("pin Postgres to CPUs %v: %v", cpus[:half], err)
	}
	if err := pinSelf(&self); err != nil {
		b.Fatalf("pin this process to CPUs %v: %v", cpus[half:], err)
	}
	return fmt.Sprintf("Postgres on CPUs %v, this process on CPUs %v", cpus[:half], cpus[half:])
}

// pinSelf sets the CPUs of every thread of this process; threads started later inherit them from
// the thread that starts them.
func pinSelf(set *unix.CPUSet) error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, set); err != nil && err != unix.ESRCH { // ESRCH: the thread ended
			return fmt.Errorf("thread %d: %w", tid, err)
		}
	}
	return nil
}

// pinPostgres sets the CPUs of the benchmarks' postmaster, then of its children (backends and
// background workers); a backend started later is forked from the postmaster and inherits them.
func pinPostgres(set *unix.CPUSet) error {
	pidFile, err := os.ReadFile(filepath.Join(pgServer.DataDir(), "postmaster.pid"))
	if err != nil {
		return err
	}
	postmaster, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(pidFile), "\n", 2)[0]))
	if err != nil {
		return fmt.Errorf("postmaster.pid: %w", err)
	}
	if err := unix.SchedSetaffinity(postmaster, set); err != nil {
		return fmt.Errorf("postmaster %d: %w", postmaster, err)
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || parentOf(pid) != postmaster {
			continue
		}
		if err := unix.SchedSetaffinity(pid, set); err != nil && err != unix.ESRCH { // ESRCH: the backend ended
			return fmt.Errorf("postgres process %d: %w", pid, err)
		}
	}
	return nil
}

// parentOf is field 4 of /proc/<pid>/stat, read after the command name's closing parenthesis
// because the name may hold spaces; 0 when unreadable.
func parentOf(pid int) int {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}
