package images

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"runtime/debug"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// SBOMArtifactType is the artifact type (and the layer's media type) of an image's SBOM: an SPDX
// 2.3 JSON document, stored in the layout as an OCI artifact whose subject is the image.
const SBOMArtifactType = "application/spdx+json"

// Module is the repository's module path prefix: its workspace modules are built from the
// revision, not downloaded, and carry the images' version.
const Module = "github.com/tidemark/tidemark"

// spdxDocument is the part of SPDX 2.3 an image's SBOM uses.
type spdxDocument struct {
	SPDXVersion       string             `json:"spdxVersion"`
	DataLicense       string             `json:"dataLicense"`
	SPDXID            string             `json:"SPDXID"`
	Name              string             `json:"name"`
	DocumentNamespace string             `json:"documentNamespace"`
	CreationInfo      spdxCreationInfo   `json:"creationInfo"`
	Packages          []spdxPackage      `json:"packages"`
	Relationships     []spdxRelationship `json:"relationships"`
}

type spdxCreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type spdxPackage struct {
	SPDXID           string            `json:"SPDXID"`
	Name             string            `json:"name"`
	VersionInfo      string            `json:"versionInfo"`
	DownloadLocation string            `json:"downloadLocation"`
	FilesAnalyzed    bool              `json:"filesAnalyzed"`
	LicenseConcluded string            `json:"licenseConcluded"`
	LicenseDeclared  string            `json:"licenseDeclared"`
	CopyrightText    string            `json:"copyrightText"`
	Checksums        []spdxChecksum    `json:"checksums,omitempty"`
	ExternalRefs     []spdxExternalRef `json:"externalRefs,omitempty"`
	PrimaryPurpose   string            `json:"primaryPackagePurpose,omitempty"`
	Comment          string            `json:"comment,omitempty"`
}

type spdxChecksum struct {
	Algorithm string `json:"algorithm"`
	Value     string `json:"checksumValue"`
}

type spdxExternalRef struct {
	Category string `json:"referenceCategory"`
	Type     string `json:"referenceType"`
	Locator  string `json:"referenceLocator"`
}

type spdxRelationship struct {
	Element string `json:"spdxElementId"`
	Type    string `json:"relationshipType"`
	Related string `json:"relatedSpdxElement"`
}

// noAssertion is SPDX's "not stated": what this document does not know (the dependencies'
// licences, where a module was fetched from) it does not guess.
const noAssertion = "NOASSERTION"

var unsafeID = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

// SPDX is the SBOM of target's binary, built for platform: the binary itself (with its SHA-256),
// the Go standard library it was built with and every module its build info lists, each with a
// package URL, all read from the Go build info the linker wrote into the binary.
func SPDX(binary string, t Target, o Options, platform string) ([]byte, error) {
	bi, err := buildinfo.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	goVersion := strings.TrimPrefix(bi.GoVersion, "go")
	license := o.License
	if license == "" {
		license = noAssertion
	}
	var settings []string
	for _, s := range bi.Settings {
		settings = append(settings, s.Key+"="+s.Value)
	}
	main := spdxPackage{
		SPDXID: "SPDXRef-Package-" + t.Name, Name: "tidemark-" + t.Name, VersionInfo: o.Version,
		DownloadLocation: "git+" + Source + "@" + o.Revision, LicenseConcluded: noAssertion, LicenseDeclared: license,
		CopyrightText: noAssertion, PrimaryPurpose: "APPLICATION",
		Checksums:    []spdxChecksum{{Algorithm: "SHA256", Value: fmt.Sprintf("%x", sum)}},
		ExternalRefs: []spdxExternalRef{purl(bi.Path, o.Version)},
		Comment:      "Go build settings: " + strings.Join(settings, " "),
	}
	doc := spdxDocument{
		SPDXVersion: "SPDX-2.3", DataLicense: "CC0-1.0", SPDXID: "SPDXRef-DOCUMENT",
		Name:              fmt.Sprintf("tidemark-%s %s %s", t.Name, o.Version, platform),
		DocumentNamespace: fmt.Sprintf("%s/sbom/%s/%s/%s/%x", Source, t.Name, o.Version, platform, sum[:8]),
		// The image's own creation time, so that the same sources give the same document.
		CreationInfo: spdxCreationInfo{Created: epoch.Format(time.RFC3339), Creators: []string{"Tool: tidemark-images", "Organization: tidemark"}},
		Packages: []spdxPackage{main, {
			SPDXID: "SPDXRef-Package-go-stdlib", Name: "stdlib", VersionInfo: goVersion, DownloadLocation: noAssertion,
			LicenseConcluded: noAssertion, LicenseDeclared: noAssertion, CopyrightText: noAssertion, PrimaryPurpose: "LIBRARY",
			ExternalRefs: []spdxExternalRef{purl("stdlib", goVersion)},
		}},
		Relationships: []spdxRelationship{
			{"SPDXRef-DOCUMENT", "DESCRIBES", main.SPDXID},
			{main.SPDXID, "DEPENDS_ON", "SPDXRef-Package-go-stdlib"},
		},
	}
	for _, m := range modules(bi, o.Version) {
		id := "SPDXRef-Package-go-" + strings.Trim(unsafeID.ReplaceAllString(m.Path+"-"+m.Version, "-"), "-")
		p := spdxPackage{
			SPDXID: id, Name: m.Path, VersionInfo: m.Version, DownloadLocation: noAssertion,
			LicenseConcluded: noAssertion, LicenseDeclared: noAssertion, CopyrightText: noAssertion, PrimaryPurpose: "LIBRARY",
			ExternalRefs: []spdxExternalRef{purl(m.Path, m.Version)},
		}
		if strings.HasPrefix(m.Path, Module) {
			p.DownloadLocation, p.LicenseDeclared = main.DownloadLocation, license
		}
		doc.Packages = append(doc.Packages, p)
		doc.Relationships = append(doc.Relationships, spdxRelationship{main.SPDXID, "DEPENDS_ON", id})
	}
	return json.MarshalIndent(doc, "", "  ")
}

// modules are the binary's modules as it was built from them: the main module and each
// dependency, a replaced one as its replacement; the repository's own workspace modules, which
// the build info calls "(devel)", at version.
func modules(bi *buildinfo.BuildInfo, version string) []debug.Module {
	var out []debug.Module
	for _, m := range append([]*debug.Module{&bi.Main}, bi.Deps...) {
		if m.Replace != nil {
			m = m.Replace
		}
		mod := *m
		if mod.Version == "(devel)" || mod.Version == "" {
			mod.Version = version
		}
		out = append(out, mod)
	}
	return out
}

func purl(path, version string) spdxExternalRef {
	return spdxExternalRef{Category: "PACKAGE-MANAGER", Type: "purl", Locator: "pkg:golang/" + path + "@" + version}
}

// writeSBOM stores doc in the layout as an OCI artifact of type SBOMArtifactType whose subject is
// img, with the empty config the image spec gives artifacts, and returns the artifact's descriptor.
func writeSBOM(p layout.Path, img v1.Image, doc []byte, name, platform string) (v1.Descriptor, error) {
	subject, err := partial.Descriptor(img)
	if err != nil {
		return v1.Descriptor{}, err
	}
	subject.Annotations, subject.Platform = nil, nil
	config := []byte("{}")
	configHash, err := writeBlob(p, config)
	if err != nil {
		return v1.Descriptor{}, err
	}
	docHash, err := writeBlob(p, doc)
	if err != nil {
		return v1.Descriptor{}, err
	}
	m := v1.Manifest{
		SchemaVersion: 2, MediaType: types.OCIManifestSchema1, ArtifactType: SBOMArtifactType,
		Config: v1.Descriptor{MediaType: types.OCIEmptyJSON, Size: int64(len(config)), Digest: configHash, Data: config},
		Layers: []v1.Descriptor{{MediaType: SBOMArtifactType, Size: int64(len(doc)), Digest: docHash,
			Annotations: map[string]string{TitleLabel: fmt.Sprintf("tidemark-%s.%s.spdx.json", name, strings.ReplaceAll(platform, "/", "-"))}}},
		Subject:     subject,
		Annotations: map[string]string{"org.opencontainers.image.created": epoch.Format(time.RFC3339)},
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return v1.Descriptor{}, err
	}
	h, err := writeBlob(p, raw)
	if err != nil {
		return v1.Descriptor{}, err
	}
	return v1.Descriptor{MediaType: types.OCIManifestSchema1, Size: int64(len(raw)), Digest: h, ArtifactType: SBOMArtifactType}, nil
}
