package images_test

import (
	"bufio"
	"context"
	"debug/elf"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/tools/deploy"
	"github.com/tidemark/tidemark/tools/images"
)

// TestImages builds every deployable's image as make images does and checks what a cluster will run:
// the entrypoint, the user, the labels, a static binary that answers -version with the stamped
// version, and a Dockerfile that gives the same entrypoint, user and labels.
func TestImages(t *testing.T) {
	root, err := deploy.Root()
	if err != nil {
		t.Fatal(err)
	}
	var targets []images.Target
	for _, d := range deploy.Deployables() {
		targets = append(targets, images.Target{Name: d.Name, Main: d.Main})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	const version, revision = "v9.8.7-test", "0123456789abcdef0123456789abcdef01234567"
	built, err := images.Build(ctx, images.Options{Root: root, Out: t.TempDir(), Version: version, Revision: revision}, targets)
	if err != nil {
		t.Fatal(err)
	}
	for i, img := range built {
		d := deploy.Deployables()[i]
		t.Run(d.Name, func(t *testing.T) {
			if img.Ref != "tidemark/"+d.Name+":"+version {
				t.Errorf("ref %s", img.Ref)
			}
			im, err := images.Load(img.Dir, runtime.GOARCH)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := im.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			entry := images.BinaryPath(d.Binary())
			if !slices.Equal(cfg.Config.Entrypoint, []string{entry}) || len(cfg.Config.Cmd) != 0 {
				t.Errorf("entrypoint %q cmd %q, want [%s]", cfg.Config.Entrypoint, cfg.Config.Cmd, entry)
			}
			if cfg.Config.User != "10001:10001" {
				t.Errorf("user %q, want 10001:10001", cfg.Config.User)
			}
			wantLabels := map[string]string{
				"org.opencontainers.image.source": images.Source, "org.opencontainers.image.version": version,
				"org.opencontainers.image.revision": revision, "org.opencontainers.image.title": "tidemark-" + d.Name,
			}
			if !maps.Equal(cfg.Config.Labels, wantLabels) {
				t.Errorf("labels %v, want %v", cfg.Config.Labels, wantLabels)
			}
			layers, err := im.Layers()
			if err != nil || len(layers) != 1 {
				t.Errorf("%d layers (%v): want the binary's only", len(layers), err)
			}

			bin := filepath.Join(t.TempDir(), d.Binary())
			if err := images.ExtractFile(im, entry, bin); err != nil {
				t.Fatal(err)
			}
			f, err := elf.Open(bin)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP {
					t.Error("the binary is dynamically linked: it cannot run on an empty base")
				}
			}
			f.Close()
			// The image's own command line, with an empty environment: -version reads no configuration.
			cmd := exec.CommandContext(ctx, bin, "-version")
			cmd.Env = []string{}
			out, err := cmd.CombinedOutput()
			want := d.Name + " " + version + " (revision " + revision + ", go"
			if err != nil || !strings.HasPrefix(string(out), want) {
				t.Errorf("%s -version = %q (%v), want %q...", entry, out, err, want)
			}
			t.Logf("%s: %.1f MiB", img.Ref, float64(img.Size["linux/"+runtime.GOARCH])/(1<<20))

			checkDockerfile(t, filepath.Join(root, d.ModuleDir(), "Dockerfile"), cfg.Config.Entrypoint, cfg.Config.User, wantLabels)
		})
	}
}

// checkDockerfile parses the Dockerfile's final stage: it must start from an empty base and give the
// same entrypoint, user and label keys as the image make images writes.
func checkDockerfile(t *testing.T, path string, entrypoint []string, user string, labels map[string]string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		from, gotUser string
		gotEntry      []string
		gotLabels     = map[string]string{}
		line          string
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "#") || l == "" {
			continue
		}
		if cont, ok := strings.CutSuffix(l, "\\"); ok {
			line += cont + " "
			continue
		}
		line += l
		instr, args, _ := strings.Cut(line, " ")
		line = ""
		switch strings.ToUpper(instr) {
		case "FROM":
			from, gotUser, gotEntry, gotLabels = strings.Fields(args)[0], "", nil, map[string]string{}
		case "USER":
			gotUser = strings.TrimSpace(args)
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(args), &gotEntry); err != nil {
				t.Errorf("%s: ENTRYPOINT %s is not the exec form: %v", path, args, err)
			}
		case "LABEL":
			for _, kv := range strings.Fields(args) {
				k, v, _ := strings.Cut(kv, "=")
				gotLabels[k] = strings.Trim(v, `"`)
			}
		}
	}
	if from != "scratch" {
		t.Errorf("%s: final stage FROM %s, want scratch", path, from)
	}
	if gotUser != user || !slices.Equal(gotEntry, entrypoint) {
		t.Errorf("%s: USER %q ENTRYPOINT %q, want %q %q", path, gotUser, gotEntry, user, entrypoint)
	}
	if !slices.Equal(slices.Sorted(maps.Keys(gotLabels)), slices.Sorted(maps.Keys(labels))) {
		t.Errorf("%s: labels %v, want the keys of %v", path, gotLabels, labels)
	}
	if gotLabels["org.opencontainers.image.version"] != "${VERSION}" || gotLabels["org.opencontainers.image.source"] != labels["org.opencontainers.image.source"] {
		t.Errorf("%s: labels %v", path, gotLabels)
	}
}
