package images_test

import (
	"bufio"
	"cmp"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"

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
		targets = append(targets, images.Target{Name: d.Name, Main: d.Main, Summary: d.Summary})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	const version, revision = "v9.8.7-test", "0123456789abcdef0123456789abcdef01234567"
	license, err := images.License(root)
	if err != nil {
		t.Fatal(err)
	}
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
				"org.opencontainers.image.source": images.Source, "org.opencontainers.image.url": images.Source,
				"org.opencontainers.image.version": version, "org.opencontainers.image.revision": revision,
				"org.opencontainers.image.title": "tidemark-" + d.Name, "org.opencontainers.image.description": d.Summary,
			}
			if license != "" {
				wantLabels["org.opencontainers.image.licenses"] = license
			}
			if d.Summary == "" || !maps.Equal(cfg.Config.Labels, wantLabels) {
				t.Errorf("labels %v, want %v", cfg.Config.Labels, wantLabels)
			}
			if m, err := im.Manifest(); err != nil || !maps.Equal(m.Annotations, wantLabels) {
				t.Errorf("manifest annotations %v (%v), want the labels %v", m.Annotations, err, wantLabels)
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

			checkSBOM(t, img.Dir, runtime.GOARCH, bin, d.Name, version)
			checkDockerfile(t, filepath.Join(root, "Dockerfile"), d.Name, cfg.Config.Entrypoint, cfg.Config.User, wantLabels)
		})
	}
}

// labelPair is one key=value of a LABEL instruction, the value quoted or bare.
var labelPair = regexp.MustCompile(`([\w.-]+)=("(?:[^"\\]|\\.)*"|\S+)`)

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
			for _, kv := range labelPair.FindAllStringSubmatch(args, -1) {
				v, err := strconv.Unquote(kv[2])
				if err != nil {
					v = kv[2]
				}
				st.labels[kv[1]] = v
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
		"org.opencontainers.image.source": labels["org.opencontainers.image.source"],
		images.DescriptionLabel:           labels[images.DescriptionLabel]} {
		if got.labels[k] != want {
			t.Errorf("%s: target %s: label %s = %q, want %q", path, target, k, got.labels[k], want)
		}
	}
}

// checkSBOM reads the SBOM stored beside the image and checks it against the binary: an SPDX 2.3
// document whose application package has the binary's SHA-256 and whose other packages are
// exactly the Go release and the modules `go version -m` lists for it (replacements resolved, the
// repository's own modules at version).
func checkSBOM(t *testing.T, dir, arch, bin, name, version string) {
	t.Helper()
	raw, err := images.SBOM(dir, arch)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		SPDXVersion, DataLicense, SPDXID, Name, DocumentNamespace string
		CreationInfo                                              struct {
			Created  string
			Creators []string
		}
		Packages []struct {
			SPDXID, Name, VersionInfo, DownloadLocation, LicenseDeclared string
			Checksums                                                    []struct{ Algorithm, ChecksumValue string }
			ExternalRefs                                                 []struct{ ReferenceType, ReferenceLocator string }
		}
		Relationships []struct{ SpdxElementID, RelationshipType, RelatedSpdxElement string }
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("SBOM: %v", err)
	}
	if doc.SPDXVersion != "SPDX-2.3" || doc.DataLicense != "CC0-1.0" || doc.SPDXID != "SPDXRef-DOCUMENT" ||
		doc.DocumentNamespace == "" || len(doc.CreationInfo.Creators) == 0 {
		t.Errorf("SBOM header: %s %s %s %q %v", doc.SPDXVersion, doc.DataLicense, doc.SPDXID, doc.DocumentNamespace, doc.CreationInfo)
	}
	if _, err := time.Parse(time.RFC3339, doc.CreationInfo.Created); err != nil {
		t.Errorf("SBOM created %q: %v", doc.CreationInfo.Created, err)
	}
	ids := map[string]bool{}
	got := map[string]bool{} // path@version of every package but the application
	var app string
	for _, p := range doc.Packages {
		if ids[p.SPDXID] || p.Name == "" || p.DownloadLocation == "" || p.LicenseDeclared == "" || len(p.ExternalRefs) != 1 ||
			p.ExternalRefs[0].ReferenceType != "purl" || !strings.HasPrefix(p.ExternalRefs[0].ReferenceLocator, "pkg:golang/") {
			t.Errorf("SBOM package %+v: a repeated id or a missing field", p)
		}
		ids[p.SPDXID] = true
		if p.Name == "tidemark-"+name {
			app = p.SPDXID
			b, err := os.ReadFile(bin)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Checksums) != 1 || p.Checksums[0].ChecksumValue != fmt.Sprintf("%x", sha256.Sum256(b)) || p.VersionInfo != version {
				t.Errorf("SBOM application package %+v: want version %s and the binary's SHA-256", p, version)
			}
			continue
		}
		got[p.Name+"@"+p.VersionInfo] = true
	}
	for _, r := range doc.Relationships {
		if !ids[r.RelatedSpdxElement] || (r.SpdxElementID != "SPDXRef-DOCUMENT" && !ids[r.SpdxElementID]) {
			t.Errorf("SBOM relationship %+v names no package", r)
		}
	}
	if app == "" || !slices.ContainsFunc(doc.Relationships, func(r struct{ SpdxElementID, RelationshipType, RelatedSpdxElement string }) bool {
		return r.SpdxElementID == "SPDXRef-DOCUMENT" && r.RelationshipType == "DESCRIBES" && r.RelatedSpdxElement == app
	}) {
		t.Errorf("SBOM describes no package tidemark-%s", name)
	}

	// The oracle: the go command's own reading of the binary's build info.
	out, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	want := map[string]bool{}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	_, goVersion, _ := strings.Cut(lines[0], ": go")
	want["stdlib@"+goVersion] = true
	for i, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) < 3 || (f[0] != "mod" && f[0] != "dep") {
			continue
		}
		path, v := f[1], f[2]
		if i+2 < len(lines) { // a replacement follows its module
			if r := strings.Fields(lines[i+2]); len(r) >= 3 && r[0] == "=>" {
				path, v = r[1], r[2]
			}
		}
		if v == "(devel)" {
			v = version
		}
		want[path+"@"+v] = true
	}
	if !maps.Equal(got, want) {
		t.Errorf("SBOM packages %v, want what go version -m lists: %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
}

// TestMultiArch: an image for two platforms is one index of both, each with its own SBOM, and the
// index carries the image's annotations: what make images writes by default.
func TestMultiArch(t *testing.T) {
	root, err := deploy.Root()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(deploy.Deployables(), func(d deploy.Deployable) bool { return d.Name == "ws" })
	if i < 0 {
		t.Fatal("no ws deployable")
	}
	d := deploy.Deployables()[i]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const version = "v9.8.7-test"
	target := images.Target{Name: d.Name, Main: d.Main, Summary: d.Summary}
	built, err := images.Build(ctx, images.Options{Root: root, Out: t.TempDir(), Version: version, Revision: "r",
		Platforms: []string{"linux/amd64", "linux/arm64"}}, []images.Target{target})
	if err != nil {
		t.Fatal(err)
	}
	dir := built[0].Dir
	for _, arch := range []string{"amd64", "arm64"} {
		im, err := images.Load(dir, arch)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := im.ConfigFile()
		if err != nil || cfg.Architecture != arch {
			t.Fatalf("%s: the image is for %v (%v)", arch, cfg.Architecture, err)
		}
		bin := filepath.Join(t.TempDir(), d.Binary())
		if err := images.ExtractFile(im, images.BinaryPath(d.Binary()), bin); err != nil {
			t.Fatal(err)
		}
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		machine := f.Machine
		f.Close()
		if want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]; machine != want {
			t.Errorf("%s image runs a %v binary", arch, machine)
		}
		checkSBOM(t, dir, arch, bin, d.Name, version)
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	top, err := idx.IndexManifest()
	if err != nil || len(top.Manifests) != 1 {
		t.Fatalf("the layout has %d entries (%v), want the one index a push takes whole", len(top.Manifests), err)
	}
	inner, err := idx.ImageIndex(top.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := inner.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	license, err := images.License(root)
	if err != nil {
		t.Fatal(err)
	}
	if want := images.Labels(target, version, "r", license); !maps.Equal(im.Annotations, want) {
		t.Errorf("index annotations %v, want %v", im.Annotations, want)
	}
}

func TestLicense(t *testing.T) {
	for _, tt := range []struct{ name, file, want string }{
		{"no LICENSE", "", ""},
		{"an SPDX line", "Copyright 2026 tidemark\nSPDX-License-Identifier: Apache-2.0\n\nLicensed under...", "Apache-2.0"},
		{"an expression", "SPDX-License-Identifier:  MIT OR Apache-2.0 \n", "MIT OR Apache-2.0"},
		{"a text without one", "Permission is hereby granted...", ""},
	} {
		dir := t.TempDir()
		if tt.file != "" {
			if err := os.WriteFile(filepath.Join(dir, "LICENSE"), []byte(tt.file), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if got, err := images.License(dir); err != nil || got != tt.want {
			t.Errorf("%s: %q (%v), want %q", tt.name, got, err, tt.want)
		}
	}
}
