package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"go/format"
	"slices"
	"strings"
	"unicode"

	"github.com/tidemark/tidemark/platform/chain/anchor"
)

// Config says what to generate.
type Config struct {
	Package  string   // the generated package's name
	IDLFile  string   // the IDL's file name, for the header
	Accounts []string // the accounts to generate, by IDL name
	// Instructions are the instructions to generate builders for, by IDL name; every error of the
	// IDL is generated.
	Instructions []string
}

// File is one generated file.
type File struct {
	Name    string
	Content []byte
}

// The legacy (Anchor 0.29) IDL, as far as the generator reads it.
type idl struct {
	Version      string           `json:"version"`
	Name         string           `json:"name"`
	Accounts     []idlDef         `json:"accounts"`
	Types        []idlDef         `json:"types"`
	Events       []idlItem        `json:"events"`
	Errors       []idlError       `json:"errors"`
	Instructions []idlInstruction `json:"instructions"`
}

type idlError struct {
	Code uint32 `json:"code"`
	Name string `json:"name"`
	Msg  string `json:"msg"`
}

type idlDef struct {
	Name string   `json:"name"`
	Docs []string `json:"docs"`
	Type struct {
		Kind     string       `json:"kind"`
		Fields   []idlField   `json:"fields"`
		Variants []idlVariant `json:"variants"`
	} `json:"type"`
}

type idlItem struct {
	Name   string     `json:"name"`
	Fields []idlField `json:"fields"`
}

type idlField struct {
	Name string          `json:"name"`
	Docs []string        `json:"docs"`
	Type json.RawMessage `json:"type"`
}

type idlVariant struct {
	Name   string          `json:"name"`
	Fields json.RawMessage `json:"fields"`
}

// typ is a field's type, resolved: a primitive, a container of one, or a defined type.
type typ struct {
	prim    string // "u64", "publicKey", "string", ... when a primitive
	array   *typ
	n       int // array length
	vec     *typ
	option  *typ
	defined string
}

func parseType(raw json.RawMessage) (*typ, error) {
	var prim string
	if json.Unmarshal(raw, &prim) == nil {
		if _, ok := prims[prim]; !ok {
			return nil, fmt.Errorf("unknown type %q", prim)
		}
		return &typ{prim: prim}, nil
	}
	var obj struct {
		Array   []json.RawMessage `json:"array"`
		Vec     json.RawMessage   `json:"vec"`
		Option  json.RawMessage   `json:"option"`
		Defined string            `json:"defined"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("type %s: %w", raw, err)
	}
	switch {
	case obj.Array != nil:
		if len(obj.Array) != 2 {
			return nil, fmt.Errorf("array type %s: want [type, length]", raw)
		}
		elem, err := parseType(obj.Array[0])
		if err != nil {
			return nil, err
		}
		var n int
		if err := json.Unmarshal(obj.Array[1], &n); err != nil || n < 0 {
			return nil, fmt.Errorf("array type %s: bad length", raw)
		}
		return &typ{array: elem, n: n}, nil
	case obj.Vec != nil:
		elem, err := parseType(obj.Vec)
		if err != nil {
			return nil, err
		}
		return &typ{vec: elem}, nil
	case obj.Option != nil:
		elem, err := parseType(obj.Option)
		if err != nil {
			return nil, err
		}
		return &typ{option: elem}, nil
	case obj.Defined != "":
		return &typ{defined: obj.Defined}, nil
	}
	return nil, fmt.Errorf("unsupported type %s", raw)
}

// primInfo is how a primitive is held in Go, read and written, and its size (0: variable).
type primInfo struct {
	goType, read, write string
	size                int
}

// prims is the table of the IDL's primitive types.
var prims = map[string]primInfo{
	"u8":        {"uint8", "U8", "AppendU8", 1},
	"i8":        {"int8", "I8", "AppendI8", 1},
	"u16":       {"uint16", "U16", "AppendU16", 2},
	"i16":       {"int16", "I16", "AppendI16", 2},
	"u32":       {"uint32", "U32", "AppendU32", 4},
	"i32":       {"int32", "I32", "AppendI32", 4},
	"u64":       {"uint64", "U64", "AppendU64", 8},
	"i64":       {"int64", "I64", "AppendI64", 8},
	"u128":      {"borsh.Uint128", "U128", "AppendU128", 16},
	"i128":      {"borsh.Int128", "I128", "AppendI128", 16},
	"bool":      {"bool", "Bool", "AppendBool", 1},
	"publicKey": {"solana.PublicKey", "", "", 32},
	"string":    {"string", "Str", "AppendStr", 0},
	"bytes":     {"[]byte", "Bytes", "AppendBytes", 0},
}

// field is a struct field, resolved.
type field struct {
	name, goName string
	docs         []string
	t            *typ
}

// def is a defined type that is generated: a struct or a fieldless enum.
type def struct {
	name     string
	docs     []string
	enum     bool
	fields   []field
	variants []string
}

// gen holds the IDL's definitions while generating.
type gen struct {
	idl   idl
	types map[string]*def // by IDL name: the types the IDL defines, resolved on demand
	raw   map[string]idlDef
	order []string // the defined types to generate, in IDL order
}

// reservedFields are the names the generated methods and the Absent field take.
var reservedFields = []string{"Absent", "EventName", "AccountName", "Discriminator", "UnmarshalBinary", "MarshalBinary", "AppendBinary", "FieldsPresent", "String"}

// Generate returns the generated files for the IDL src.
func Generate(src []byte, cfg Config) ([]File, error) {
	g := &gen{types: map[string]*def{}, raw: map[string]idlDef{}}
	if err := json.Unmarshal(src, &g.idl); err != nil {
		return nil, fmt.Errorf("parse the IDL: %w", err)
	}
	for _, t := range g.idl.Types {
		g.raw[t.Name] = t
	}
	if err := checkErrors(g.idl.Errors); err != nil {
		return nil, err
	}

	events := make([]*def, 0, len(g.idl.Events))
	for _, e := range g.idl.Events {
		d, err := g.structDef(e.Name, nil, e.Fields)
		if err != nil {
			return nil, fmt.Errorf("event %s: %w", e.Name, err)
		}
		if len(d.fields) == 0 {
			return nil, fmt.Errorf("event %s has no fields", e.Name)
		}
		events = append(events, d)
	}
	accounts := make([]*def, 0, len(cfg.Accounts))
	for _, name := range cfg.Accounts {
		i := slices.IndexFunc(g.idl.Accounts, func(a idlDef) bool { return a.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("account %s is not in the IDL", name)
		}
		a := g.idl.Accounts[i]
		if a.Type.Kind != "struct" {
			return nil, fmt.Errorf("account %s is a %s, want a struct", name, a.Type.Kind)
		}
		d, err := g.structDef(a.Name, a.Docs, a.Type.Fields)
		if err != nil {
			return nil, fmt.Errorf("account %s: %w", name, err)
		}
		if g.structSize(d) == 0 {
			return nil, fmt.Errorf("account %s has a variable size", name)
		}
		accounts = append(accounts, d)
	}
	instructions, err := g.instructionDefs(cfg.Instructions)
	if err != nil {
		return nil, err
	}
	// The types come in IDL order, whatever order they were reached in.
	slices.SortFunc(g.order, func(a, b string) int {
		return slices.IndexFunc(g.idl.Types, func(t idlDef) bool { return t.Name == a }) -
			slices.IndexFunc(g.idl.Types, func(t idlDef) bool { return t.Name == b })
	})

	header := fmt.Sprintf("// Code generated by chaingen from %s (%s %s). DO NOT EDIT.\n\npackage %s\n\n", cfg.IDLFile, g.idl.Name, g.idl.Version, cfg.Package)
	var files []File
	for _, part := range []struct {
		name string
		emit func(*bytes.Buffer)
	}{
		{"zz_generated.types.go", func(b *bytes.Buffer) { g.emitTypes(b) }},
		{"zz_generated.events.go", func(b *bytes.Buffer) { g.emitEvents(b, events) }},
		{"zz_generated.accounts.go", func(b *bytes.Buffer) { g.emitAccounts(b, accounts) }},
		{"zz_generated.errors.go", func(b *bytes.Buffer) { g.emitErrors(b) }},
		{"zz_generated.instructions.go", func(b *bytes.Buffer) { g.emitInstructions(b, instructions) }},
	} {
		var b bytes.Buffer
		b.WriteString(header)
		part.emit(&b)
		src, err := format.Source(fixImports(b.Bytes()))
		if err != nil {
			return nil, fmt.Errorf("format %s: %w\n%s", part.name, err, b.Bytes())
		}
		files = append(files, File{Name: part.name, Content: src})
	}
	return files, nil
}

// structDef resolves the fields of a struct and, through them, every type they use.
func (g *gen) structDef(name string, docs []string, fields []idlField) (*def, error) {
	d := &def{name: name, docs: docs}
	seen := map[string]bool{}
	for _, f := range fields {
		t, err := parseType(f.Type)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.Name, err)
		}
		if err := g.use(t); err != nil {
			return nil, fmt.Errorf("field %s: %w", f.Name, err)
		}
		gn := goName(f.Name)
		if seen[gn] || slices.Contains(reservedFields, gn) {
			return nil, fmt.Errorf("field %s: Go name %s is taken", f.Name, gn)
		}
		seen[gn] = true
		d.fields = append(d.fields, field{name: f.Name, goName: gn, docs: f.Docs, t: t})
	}
	return d, nil
}

// use resolves the defined types t refers to, once each.
func (g *gen) use(t *typ) error {
	switch {
	case t.array != nil:
		return g.use(t.array)
	case t.vec != nil:
		return g.use(t.vec)
	case t.option != nil:
		return g.use(t.option)
	case t.defined == "":
		return nil
	}
	if _, ok := g.types[t.defined]; ok {
		return nil
	}
	raw, ok := g.raw[t.defined]
	if !ok {
		return fmt.Errorf("type %s is not defined", t.defined)
	}
	switch raw.Type.Kind {
	case "struct":
		g.types[t.defined] = nil // a placeholder against cycles
		d, err := g.structDef(raw.Name, raw.Docs, raw.Type.Fields)
		if err != nil {
			return fmt.Errorf("type %s: %w", raw.Name, err)
		}
		g.types[t.defined] = d
	case "enum":
		d := &def{name: raw.Name, docs: raw.Docs, enum: true}
		for _, v := range raw.Type.Variants {
			if len(v.Fields) > 0 && string(v.Fields) != "null" {
				return fmt.Errorf("enum %s: variant %s has fields, which the generator does not support yet", raw.Name, v.Name)
			}
			d.variants = append(d.variants, v.Name)
		}
		if len(d.variants) == 0 || len(d.variants) > 256 {
			return fmt.Errorf("enum %s has %d variants", raw.Name, len(d.variants))
		}
		g.types[t.defined] = d
	default:
		return fmt.Errorf("type %s is a %s", raw.Name, raw.Type.Kind)
	}
	g.order = append(g.order, t.defined)
	return nil
}

// size is the encoded size of t, 0 when it varies.
func (g *gen) size(t *typ) int {
	switch {
	case t.prim != "":
		return prims[t.prim].size
	case t.array != nil:
		return t.n * g.size(t.array)
	case t.vec != nil, t.option != nil:
		return 0
	}
	return g.structSize(g.types[t.defined])
}

// structSize is the encoded size of the struct or enum d, 0 when it varies.
func (g *gen) structSize(d *def) int {
	if d.enum {
		return 1
	}
	total := 0
	for _, f := range d.fields {
		s := g.size(f.t)
		if s == 0 {
			return 0
		}
		total += s
	}
	return total
}

// minSize is the fewest bytes t can take: what a Vec's length is checked against.
func (g *gen) minSize(t *typ) int {
	switch {
	case t.prim == "string" || t.prim == "bytes":
		return 4
	case t.prim != "":
		return prims[t.prim].size
	case t.array != nil:
		return t.n * g.minSize(t.array)
	case t.vec != nil:
		return 4
	case t.option != nil:
		return 1
	}
	d := g.types[t.defined]
	if d.enum {
		return 1
	}
	total := 0
	for _, f := range d.fields {
		total += g.minSize(f.t)
	}
	return total
}

func (g *gen) goType(t *typ) string {
	switch {
	case t.prim != "":
		return prims[t.prim].goType
	case t.array != nil:
		return fmt.Sprintf("[%d]%s", t.n, g.goType(t.array))
	case t.vec != nil:
		return "[]" + g.goType(t.vec)
	case t.option != nil:
		return "borsh.Option[" + g.goType(t.option) + "]"
	}
	return t.defined
}

// loopVar names the index of a loop nested depth deep.
func loopVar(depth int) string { return string(rune('i' + depth)) }

// decode writes the statements that read a t into dst, an addressable expression.
func (g *gen) decode(b *bytes.Buffer, dst string, t *typ, depth int) {
	switch {
	case t.prim == "publicKey":
		fmt.Fprintf(b, "d.Fill(%s[:])\n", dst)
	case t.prim != "":
		fmt.Fprintf(b, "%s = d.%s()\n", dst, prims[t.prim].read)
	case t.array != nil && t.array.prim == "u8":
		fmt.Fprintf(b, "d.Fill(%s[:])\n", dst)
	case t.array != nil:
		v := loopVar(depth)
		fmt.Fprintf(b, "for %s := range %s {\n", v, dst)
		g.decode(b, dst+"["+v+"]", t.array, depth+1)
		b.WriteString("}\n")
	case t.vec != nil && t.vec.prim == "u8":
		fmt.Fprintf(b, "%s = d.Bytes()\n", dst)
	case t.vec != nil:
		v := loopVar(depth)
		fmt.Fprintf(b, "%s = make(%s, d.Length(%d))\n", dst, g.goType(t), g.minSize(t.vec))
		fmt.Fprintf(b, "for %s := range %s {\n", v, dst)
		g.decode(b, dst+"["+v+"]", t.vec, depth+1)
		b.WriteString("}\n")
	case t.option != nil:
		fmt.Fprintf(b, "%s = %s{}\n", dst, g.goType(t))
		fmt.Fprintf(b, "if d.Option() {\n%s.Some = true\n", dst)
		g.decode(b, dst+".Value", t.option, depth)
		b.WriteString("}\n")
	case g.types[t.defined].enum:
		fmt.Fprintf(b, "%s = %s(d.Enum(%d))\n", dst, t.defined, len(g.types[t.defined].variants))
	default:
		fmt.Fprintf(b, "%s.decode(d)\n", dst)
	}
}

// encode writes the statements that append src, an addressable expression of type t, to b.
func (g *gen) encode(b *bytes.Buffer, src string, t *typ, depth int) {
	switch {
	case t.prim == "publicKey":
		fmt.Fprintf(b, "b = append(b, %s[:]...)\n", src)
	case t.prim != "":
		fmt.Fprintf(b, "b = borsh.%s(b, %s)\n", prims[t.prim].write, src)
	case t.array != nil && t.array.prim == "u8":
		fmt.Fprintf(b, "b = append(b, %s[:]...)\n", src)
	case t.array != nil:
		v := loopVar(depth)
		fmt.Fprintf(b, "for %s := range %s {\n", v, src)
		g.encode(b, src+"["+v+"]", t.array, depth+1)
		b.WriteString("}\n")
	case t.vec != nil && t.vec.prim == "u8":
		fmt.Fprintf(b, "b = borsh.AppendBytes(b, %s)\n", src)
	case t.vec != nil:
		v := loopVar(depth)
		fmt.Fprintf(b, "b = borsh.AppendLength(b, len(%s))\n", src)
		fmt.Fprintf(b, "for %s := range %s {\n", v, src)
		g.encode(b, src+"["+v+"]", t.vec, depth+1)
		b.WriteString("}\n")
	case t.option != nil:
		fmt.Fprintf(b, "b = borsh.AppendOption(b, %s.Some)\n", src)
		fmt.Fprintf(b, "if %s.Some {\n", src)
		g.encode(b, src+".Value", t.option, depth)
		b.WriteString("}\n")
	case g.types[t.defined].enum:
		fmt.Fprintf(b, "b = append(b, uint8(%s))\n", src)
	default:
		fmt.Fprintf(b, "b = %s.append(b)\n", src)
	}
}

// comment writes docs as a comment, or fallback when there are none.
func comment(b *bytes.Buffer, docs []string, fallback string) {
	if len(docs) == 0 {
		docs = []string{fallback}
	}
	for _, l := range docs {
		fmt.Fprintf(b, "// %s\n", strings.TrimSpace(l))
	}
}

// structFields writes the fields of a struct type's body.
func (g *gen) structFields(b *bytes.Buffer, d *def) {
	for _, f := range d.fields {
		if len(f.docs) > 0 {
			comment(b, f.docs, "")
		}
		fmt.Fprintf(b, "%s %s `idl:%q`\n", f.goName, g.goType(f.t), f.name)
	}
}

func (g *gen) emitTypes(b *bytes.Buffer) {
	for _, name := range g.order {
		d := g.types[name]
		if d.enum {
			g.emitEnum(b, d)
			continue
		}
		comment(b, d.docs, fmt.Sprintf("%s is the IDL type %s.", name, name))
		fmt.Fprintf(b, "type %s struct {\n", name)
		g.structFields(b, d)
		b.WriteString("}\n\n")

		fmt.Fprintf(b, "func (x *%s) decode(d *borsh.Decoder) {\n", name)
		for _, f := range d.fields {
			g.decode(b, "x."+f.goName, f.t, 0)
		}
		b.WriteString("}\n\n")
		fmt.Fprintf(b, "func (x *%s) append(b []byte) []byte {\n", name)
		for _, f := range d.fields {
			g.encode(b, "x."+f.goName, f.t, 0)
		}
		b.WriteString("return b\n}\n\n")
	}
}

func (g *gen) emitEnum(b *bytes.Buffer, d *def) {
	comment(b, d.docs, fmt.Sprintf("%s is the IDL enum %s: its variant's index, as Borsh writes it.", d.name, d.name))
	fmt.Fprintf(b, "type %s uint8\n\n", d.name)
	fmt.Fprintf(b, "// The variants of %s.\nconst (\n", d.name)
	for i, v := range d.variants {
		if i == 0 {
			fmt.Fprintf(b, "%s%s %s = iota\n", d.name, v, d.name)
		} else {
			fmt.Fprintf(b, "%s%s\n", d.name, v)
		}
	}
	b.WriteString(")\n\n")
	fmt.Fprintf(b, "// String is the variant's IDL name.\nfunc (v %s) String() string {\nswitch v {\n", d.name)
	for _, v := range d.variants {
		fmt.Fprintf(b, "case %s%s:\nreturn %q\n", d.name, v, v)
	}
	fmt.Fprintf(b, "}\nreturn %q + strconv.Itoa(int(v)) + \")\"\n}\n\n", d.name+"(")
}

// discriminatorBytes is disc as a list of byte literals.
func discriminatorBytes(disc anchor.Discriminator) string {
	parts := make([]string, len(disc))
	for i, c := range disc {
		parts[i] = fmt.Sprintf("%#02x", c)
	}
	return strings.Join(parts, ", ")
}

func discriminatorLiteral(disc anchor.Discriminator) string {
	return "anchor.Discriminator{" + discriminatorBytes(disc) + "}"
}

func (g *gen) emitEvents(b *bytes.Buffer, events []*def) {
	b.WriteString("// newEvent returns a new event of the type the discriminator disc (its first eight bytes,\n// little-endian) names, nil for none.\n")
	b.WriteString("func newEvent(disc uint64) Event {\nswitch disc {\n")
	for _, e := range events {
		disc := anchor.EventDiscriminator(e.name)
		fmt.Fprintf(b, "case %#016x:\nreturn new(%s)\n", binary.LittleEndian.Uint64(disc[:]), e.name)
	}
	b.WriteString("}\nreturn nil\n}\n\n")

	for _, e := range events {
		disc := anchor.EventDiscriminator(e.name)
		n := len(e.fields)
		fmt.Fprintf(b, "// %s is the event %s.\ntype %s struct {\n", e.name, e.name, e.name)
		g.structFields(b, e)
		b.WriteString("// Absent is how many of the last fields the program that emitted the event did not have yet\n// (they are zero): 0 for today's layout.\nAbsent int `idl:\"-\"`\n}\n\n")
		fmt.Fprintf(b, "// %sFields is the number of fields of %s today.\nconst %sFields = %d\n\n", e.name, e.name, e.name, n)
		fmt.Fprintf(b, "// EventName is %q.\nfunc (*%s) EventName() string { return %q }\n\n", e.name, e.name, e.name)
		fmt.Fprintf(b, "// Discriminator is sha256(\"event:%s\")[:8].\nfunc (*%s) Discriminator() anchor.Discriminator {\nreturn %s\n}\n\n", e.name, e.name, discriminatorLiteral(disc))
		fmt.Fprintf(b, "// FieldsPresent is the number of fields the event had when emitted.\nfunc (e *%s) FieldsPresent() int { return %sFields - e.Absent }\n\n", e.name, e.name)

		fmt.Fprintf(b, "// UnmarshalBinary decodes the event from data, its discriminator included. Data that ends\n// after one of its fields is an event of an older layout: the rest are absent.\n")
		fmt.Fprintf(b, "func (e *%s) UnmarshalBinary(data []byte) error {\n*e = %s{}\nd := new(borsh.Decoder)\n", e.name, e.name)
		fmt.Fprintf(b, "if err := begin(d, data, %q, %#016x); err != nil {\nreturn err\n}\n", e.name, binary.LittleEndian.Uint64(disc[:]))
		for i, f := range e.fields {
			g.decode(b, "e."+f.goName, f.t, 0)
			if i < n-1 {
				fmt.Fprintf(b, "if d.Done() {\nreturn e.end(d, %d, %q)\n}\n", i+1, f.name)
			} else {
				fmt.Fprintf(b, "return e.end(d, %d, %q)\n}\n\n", i+1, f.name)
			}
		}
		fmt.Fprintf(b, "func (e *%s) end(d *borsh.Decoder, n int, field string) error {\nabsent, err := endEvent(d, %q, field, n, %sFields)\ne.Absent = absent\nreturn err\n}\n\n", e.name, e.name, e.name)

		fmt.Fprintf(b, "// AppendBinary appends the event, its discriminator first, in the layout it was decoded from.\n")
		fmt.Fprintf(b, "func (e *%s) AppendBinary(b []byte) ([]byte, error) {\nn := %sFields - e.Absent\n", e.name, e.name)
		fmt.Fprintf(b, "if n < 1 || n > %sFields {\nreturn b, absentError(%q, e.Absent, %sFields)\n}\n", e.name, e.name, e.name)
		fmt.Fprintf(b, "b = append(b, %s)\n", discriminatorBytes(disc))
		for i, f := range e.fields {
			g.encode(b, "e."+f.goName, f.t, 0)
			if i < n-1 {
				fmt.Fprintf(b, "if n == %d {\nreturn b, nil\n}\n", i+1)
			}
		}
		b.WriteString("return b, nil\n}\n\n")
		fmt.Fprintf(b, "// MarshalBinary encodes the event, its discriminator first, in the layout it was decoded from.\nfunc (e *%s) MarshalBinary() ([]byte, error) { return e.AppendBinary(nil) }\n\n", e.name)
	}
}

func (g *gen) emitAccounts(b *bytes.Buffer, accounts []*def) {
	for _, a := range accounts {
		disc := anchor.AccountDiscriminator(a.name)
		size := anchor.DiscriminatorSize + g.structSize(a)
		comment(b, a.docs, fmt.Sprintf("%s is the account %s.", a.name, a.name))
		fmt.Fprintf(b, "type %s struct {\n", a.name)
		g.structFields(b, a)
		b.WriteString("}\n\n")
		fmt.Fprintf(b, "// %sSize is the size of a %s account's data, its discriminator included.\nconst %sSize = %d\n\n", a.name, a.name, a.name, size)
		fmt.Fprintf(b, "// AccountName is %q.\nfunc (*%s) AccountName() string { return %q }\n\n", a.name, a.name, a.name)
		fmt.Fprintf(b, "// Discriminator is sha256(\"account:%s\")[:8].\nfunc (*%s) Discriminator() anchor.Discriminator {\nreturn %s\n}\n\n", a.name, a.name, discriminatorLiteral(disc))
		fmt.Fprintf(b, "// UnmarshalBinary decodes the account from its data, discriminator included, which must be\n// exactly %sSize bytes.\n", a.name)
		fmt.Fprintf(b, "func (a *%s) UnmarshalBinary(data []byte) error {\nd := new(borsh.Decoder)\n", a.name)
		fmt.Fprintf(b, "if err := begin(d, data, %q, %#016x); err != nil {\nreturn err\n}\n", a.name, binary.LittleEndian.Uint64(disc[:]))
		fmt.Fprintf(b, "a.decode(d)\nreturn endAccount(d, %q, a.fieldAt)\n}\n\n", a.name)

		fmt.Fprintf(b, "func (a *%s) decode(d *borsh.Decoder) {\n", a.name)
		for _, f := range a.fields {
			g.decode(b, "a."+f.goName, f.t, 0)
		}
		b.WriteString("}\n\n")

		fmt.Fprintf(b, "// fieldAt names the field at offset off of the data, for errors.\nfunc (*%s) fieldAt(off int) string {\nswitch {\n", a.name)
		end := anchor.DiscriminatorSize
		for _, f := range a.fields {
			end += g.size(f.t)
			fmt.Fprintf(b, "case off < %d:\nreturn %q\n", end, f.name)
		}
		b.WriteString("}\nreturn \"\"\n}\n\n")

		fmt.Fprintf(b, "// AppendBinary appends the account's data, its discriminator first.\nfunc (a *%s) AppendBinary(b []byte) ([]byte, error) {\n", a.name)
		fmt.Fprintf(b, "b = append(b, %s)\n", discriminatorBytes(disc))
		for _, f := range a.fields {
			g.encode(b, "a."+f.goName, f.t, 0)
		}
		b.WriteString("return b, nil\n}\n\n")
		fmt.Fprintf(b, "// MarshalBinary encodes the account's data, its discriminator first.\nfunc (a *%s) MarshalBinary() ([]byte, error) { return a.AppendBinary(nil) }\n\n", a.name)
	}
}

// fixImports adds the imports the generated code uses.
func fixImports(src []byte) []byte {
	var imports []string
	for _, imp := range []struct{ path, use string }{
		{"cmp", "cmp."},
		{"slices", "slices."},
		{"strconv", "strconv."},
		{"github.com/tidemark/tidemark/platform/chain/anchor", "anchor."},
		{"github.com/tidemark/tidemark/platform/chain/borsh", "borsh."},
		{"github.com/tidemark/tidemark/platform/chain/solana", "solana."},
	} {
		if bytes.Contains(src, []byte(imp.use)) {
			imports = append(imports, fmt.Sprintf("%q", imp.path))
		}
	}
	if len(imports) == 0 {
		return src
	}
	i := bytes.Index(src, []byte("\n\n"))               // after the header comment
	j := i + bytes.Index(src[i+2:], []byte("\n\n")) + 2 // after the package clause
	return slices.Concat(src[:j], []byte("\n\nimport (\n"+strings.Join(imports, "\n")+"\n)"), src[j:])
}

// initialisms are the words Go spells in capitals (staticcheck's list, as far as the IDL uses it).
var initialisms = map[string]string{"Id": "ID", "Ts": "TS", "Uuid": "UUID", "Url": "URL", "Ip": "IP", "Api": "API"}

// goName exports an IDL camelCase name, with Go's initialisms.
func goName(s string) string {
	var words []string
	start := 0
	for i := 1; i <= len(s); i++ {
		if i == len(s) || (unicode.IsUpper(rune(s[i])) && !unicode.IsUpper(rune(s[i-1]))) {
			words = append(words, s[start:i])
			start = i
		}
	}
	var b strings.Builder
	for _, w := range words {
		w = strings.ToUpper(w[:1]) + w[1:]
		if r, ok := initialisms[w]; ok {
			w = r
		}
		b.WriteString(w)
	}
	return b.String()
}
