package httpapi

import (
	"bytes"
	"cmp"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// checkNames refuses what encoding/json lets through into a struct even with unknown fields
// disallowed: a property named in another case than the field's ("Amount" for "amount", which
// json matches case-insensitively) and a property given twice (json keeps the last one silently).
// It walks body along v's type; values of a type that decodes itself, of a map or of an interface
// are not looked into beyond their own object's names.
func checkNames(body []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	return walkNames(dec, t, "")
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	fieldTypes      sync.Map // reflect.Type -> map[string]reflect.Type: a struct's JSON properties
)

// walkNames reads the next value from dec, at path in the body ("params.orders[1]"), checking its
// objects' names against t.
func walkNames(dec *json.Decoder, t reflect.Type, path string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && (reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler)) {
		t = nil // it reads its own value
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch delim {
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			if err := walkNames(dec, elem, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case '{':
		var fields map[string]reflect.Type
		var elem reflect.Type
		switch {
		case t != nil && t.Kind() == reflect.Struct:
			fields = structFields(t)
		case t != nil && t.Kind() == reflect.Map:
			elem = t.Elem()
		}
		seen := map[string]bool{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return err
			}
			name, _ := tok.(string) // inside an object, keys are strings
			at := name
			if path != "" {
				at = path + "." + name
			}
			if seen[name] {
				return fmt.Errorf("property %q appears twice", at)
			}
			seen[name] = true
			next := elem
			if fields != nil {
				ft, ok := fields[name]
				if !ok {
					for known := range fields {
						if strings.EqualFold(known, name) {
							return fmt.Errorf("unknown property %q (property names are case-sensitive: %q)", at, strings.TrimSuffix(at, name)+known)
						}
					}
				}
				next = ft
			}
			if err := walkNames(dec, next, at); err != nil {
				return err
			}
		}
	}
	_, err = dec.Token() // the closing delimiter
	return err
}

// structFields are the JSON properties of struct type t and their types, embedded structs'
// promoted as encoding/json promotes them.
func structFields(t reflect.Type) map[string]reflect.Type {
	if v, ok := fieldTypes.Load(t); ok {
		return v.(map[string]reflect.Type)
	}
	fields := map[string]reflect.Type{}
	addFields(t, fields)
	fieldTypes.Store(t, fields)
	return fields
}

func addFields(t reflect.Type, into map[string]reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				addFields(ft, into)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if _, taken := into[cmp.Or(name, f.Name)]; !taken { // the outer field wins, as in encoding/json
			into[cmp.Or(name, f.Name)] = f.Type
		}
	}
}
