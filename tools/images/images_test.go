package images_test

import (
	"bufio"
	"cmp"
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

			checkDockerfile(t, filepath.Join(root, "Dockerfile"), d.Name, cfg.Config.Entrypoint, cfg.Config.User, wantLabels)
		})
	}
}

// dockerStage is what one stage of a Dockerfile gives its image's config.
type dockerStage struct {
	from, user string
	entry      []string
	labels     map[string]string
	binaries   []string // the destinations of its COPY --from=build
}

// parseDockerfile reads the stages of a Dockerfile by name (FROM ... AS name).
func parseDockerfile(t *testing.T, path string) map[string]*dockerStage {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stages := map[string]*dockerStage{}
	var st *dockerStage
	var line string
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
		fields := strings.Fields(args)
		switch strings.ToUpper(instr) {
		case "FROM":
			st = &dockerStage{from: fields[0], labels: map[string]string{}}
			if len(fields) == 3 && strings.EqualFold(fields[1], "AS") {
				stages[fields[2]] = st
			}
		case "USER":
			st.user = strings.TrimSpace(args)
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(args), &st.entry); err != nil {
				t.Errorf("%s: ENTRYPOINT %s is not the exec form: %v", path, args, err)
			}
		case "LABEL":
			for _, kv := range fields {
				k, v, _ := strings.Cut(kv, "=")
				st.labels[k] = strings.Trim(v, `"`)
			}
		case "COPY":
			if len(fields) == 3 && fields[0] == "--from=build" {
				st.binaries = append(st.binaries, fields[2])
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return stages
}

// checkDockerfile resolves the Dockerfile's target stage through the stages it starts from: it must
// rest on an empty base, copy the binary its entrypoint runs, and give the same entrypoint, user and
// labels as the image make images writes.
func checkDockerfile(t *testing.T, path, target string, entrypoint []string, user string, labels map[string]string) {
	t.Helper()
	stages := parseDockerfile(t, path)
	var chain []*dockerStage // the target first, its base last
	for name := target; ; {
		st, ok := stages[name]
		if !ok || len(chain) > len(stages) {
			t.Fatalf("%s: no stage %s (or a loop) on the way from target %s", path, name, target)
		}
		chain = append(chain, st)
		if _, named := stages[st.from]; !named {
			break
		}
		name = st.from
	}
	got := dockerStage{labels: map[string]string{}}
	for _, st := range slices.Backward(chain) { // a stage overrides its base
		got.from = cmp.Or(got.from, st.from)
		got.user = cmp.Or(st.user, got.user)
		if st.entry != nil {
			got.entry = st.entry
		}
		maps.Copy(got.labels, st.labels)
		got.binaries = append(got.binaries, st.binaries...)
	}
	if got.from != "scratch" {
		t.Errorf("%s: target %s rests on %s, want scratch", path, target, got.from)
	}
	if got.user != user || !slices.Equal(got.entry, entrypoint) || !slices.Equal(got.binaries, entrypoint[:1]) {
		t.Errorf("%s: target %s: USER %q ENTRYPOINT %q copying %q, want %q %q", path, target, got.user, got.entry, got.binaries, user, entrypoint)
	}
	if !slices.Equal(slices.Sorted(maps.Keys(got.labels)), slices.Sorted(maps.Keys(labels))) {
		t.Errorf("%s: target %s: labels %v, want the keys of %v", path, target, got.labels, labels)
	}
	for k, want := range map[string]string{"org.opencontainers.image.version": "${VERSION}",
		"org.opencontainers.image.revision": "${REVISION}", images.TitleLabel: labels[images.TitleLabel],
		"org.opencontainers.image.source": labels["org.opencontainers.image.source"]} {
		if got.labels[k] != want {
			t.Errorf("%s: target %s: label %s = %q, want %q", path, target, k, got.labels[k], want)
		}
	}
}
