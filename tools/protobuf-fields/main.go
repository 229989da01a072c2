// Command protobuf-fields writes the protobuf wire facts of the Kubernetes built-in kinds that the
// sandbox needs to read request bodies sent as application/vnd.kubernetes.protobuf (client-go's
// typed clients send built-in objects so since 1.32): for each message, its fields with their
// numbers, wire kinds, JSON names and the Go facts that decide what the object marshals to in JSON.
//
// Regenerate the sandbox's copy with `go generate` in this directory, that is, from the repository
// root:
//
//	cd tools/protobuf-fields && go run . -o ../../python/streams_k8s/sandbox/admission/protobuf_fields.json
//
// (tests/test_sandbox_protobuf_fields.py runs the same and compares).
//
// The facts are read by reflection from the Go types and their `protobuf:"..."` and `json:"..."`
// tags, starting from the kinds registered in client-go's scheme (every built-in group, with the
// review and subresource kinds and the meta options such as DeleteOptions), in apiextensions'
// (CRDs) and in meta.k8s.io/v1. A tag's number is taken as written; its wire kind and opt/rep are not: some hand-written
// tags are stale (PriorityClass.value is tagged "bytes", DeleteOptions.propagationPolicy "varint"),
// while the generated marshallers follow the Go type, and so does this table. Every message is
// then marshalled, filled, by its generated code and the table checked against the bytes.
//
// Output, one JSON document:
//
//	"kinds":    {apiVersion: {kind: message}}
//	"messages": {message: [[number, wire, json, type, flags(, cast)], ...]}
//	"custom":   messages whose Go type marshals its own JSON (Time, Quantity, IntOrString, ...)
//	"lists":    messages that wrap a named Go slice (map values such as ExtraValue): their JSON is
//	            the list of their one repeated field
//
// wire is varint, fixed64, fixed32 or bytes (length-delimited). A field's type is a scalar
// (string, bytes, bool, int32, int64, uint32, uint64, float32, float64), a message name, or
// map[K]V of those. Flags: o omitempty, z omitzero, r repeated, p pointer (presence is kept),
// i inline (an embedded struct whose JSON fields sit in the parent's). cast holds the tag's
// casttype/castkey/castvalue.
package main

//go:generate go run . -o ../../python/streams_k8s/sandbox/admission/protobuf_fields.json

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	apiextensionsscheme "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/scheme"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

type field struct {
	number int
	wire   string
	json   string
	typ    string
	flags  string
	cast   string
}

type table struct {
	kinds    map[string]map[string]string
	messages map[string][]field
	goTypes  map[string]reflect.Type
	custom   map[string]bool
	lists    map[string]bool
}

type protoMarshaler interface{ Marshal() ([]byte, error) }

var (
	jsonMarshalerType  = reflect.TypeOf((*json.Marshaler)(nil)).Elem()
	protoMarshalerType = reflect.TypeOf((*protoMarshaler)(nil)).Elem()
)

func main() {
	out := flag.String("o", "", "file to write (default: standard output)")
	samples := flag.String("samples", "", "also write a sample object of each kind, as protobuf and JSON, to this file")
	flag.Parse()
	if err := run(*out, *samples); err != nil {
		fmt.Fprintln(os.Stderr, "protobuf-fields:", err)
		os.Exit(1)
	}
}

func run(out, samples string) (err error) {
	defer func() { // the walk panics on a Go type it has no protobuf form for
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	t := &table{
		kinds:    map[string]map[string]string{},
		messages: map[string][]field{},
		goTypes:  map[string]reflect.Type{},
		custom:   map[string]bool{},
		lists:    map[string]bool{},
	}
	// meta.k8s.io/v1: where kube-apiserver looks for a DeleteOptions body that names no kind
	metaScheme := runtime.NewScheme()
	metav1.AddToGroupVersion(metaScheme, metav1.SchemeGroupVersion)
	kindOf := map[string]registered{} // one kind per message, for the samples
	for _, scheme := range []*runtime.Scheme{clientgoscheme.Scheme, apiextensionsscheme.Scheme, metaScheme} {
		for gvk, goType := range scheme.AllKnownTypes() {
			if gvk.Version == runtime.APIVersionInternal || !isMessage(goType) {
				continue
			}
			apiVersion := gvk.GroupVersion().String()
			if t.kinds[apiVersion] == nil {
				t.kinds[apiVersion] = map[string]string{}
			}
			name := t.message(goType)
			t.kinds[apiVersion][gvk.Kind] = name
			if known, ok := kindOf[name]; !ok || gvk.String() < known.gvk.String() {
				kindOf[name] = registered{scheme, gvk}
			}
		}
	}
	if err := t.check(); err != nil {
		return err
	}
	if samples != "" {
		if err := t.writeSamples(samples, kindOf); err != nil {
			return err
		}
	}
	text, err := t.render()
	if err != nil {
		return err
	}
	if out == "" {
		_, err = os.Stdout.Write(text)
		return err
	}
	return os.WriteFile(out, text, 0o644)
}

// isMessage: a type is a protobuf message when it has the generated (or a hand-written) marshaller.
func isMessage(goType reflect.Type) bool {
	return reflect.PointerTo(goType).Implements(protoMarshalerType)
}

// messageName is the name go-to-protobuf gives a Go type: its package path with dots.
func messageName(goType reflect.Type) string {
	return strings.ReplaceAll(goType.PkgPath(), "/", ".") + "." + goType.Name()
}

// message records the fields of a message's Go type (once) and returns the message's name.
func (t *table) message(goType reflect.Type) string {
	name := messageName(goType)
	if _, seen := t.messages[name]; seen {
		return name
	}
	t.messages[name] = nil // reserved: types refer to themselves (JSONSchemaProps)
	t.goTypes[name] = goType
	if reflect.PointerTo(goType).Implements(jsonMarshalerType) {
		t.custom[name] = true
	}
	if goType.Kind() == reflect.Slice { // a named slice with a marshaller: {repeated items = 1}
		t.lists[name] = true
		elem, _ := t.valueType(goType.Elem())
		t.messages[name] = []field{{number: 1, wire: wireOf(goType.Elem()), json: "items", typ: elem, flags: "r"}}
		return name
	}
	if fields, _, ok := t.handWritten(goType); ok {
		t.messages[name] = fields
		return name
	}
	var fields []field
	for i := 0; i < goType.NumField(); i++ {
		f := goType.Field(i)
		tag, ok := f.Tag.Lookup("protobuf")
		if !ok || tag == "-" { // not on the wire (Time's time.Time is marshalled by hand)
			continue
		}
		fields = append(fields, t.field(goType, f, tag))
	}
	sort.Slice(fields, func(a, b int) bool { return fields[a].number < fields[b].number })
	t.messages[name] = fields
	return name
}

// handWritten tells the messages whose marshallers are written by hand, so that no Go tag states
// their fields (apimachinery's time_proto.go, micro_time_proto.go, quantity_proto.go): what they
// write, and a sample value with which that is checked like the other messages.
func (t *table) handWritten(goType reflect.Type) ([]field, any, bool) {
	switch goType {
	case reflect.TypeOf(metav1.Time{}):
		return t.timestamp(), metav1.NewTime(time.Unix(1, 0)), true
	case reflect.TypeOf(metav1.MicroTime{}):
		return t.timestamp(), metav1.NewMicroTime(time.Unix(1, 1000)), true
	case reflect.TypeOf(resource.Quantity{}):
		return []field{{number: 1, wire: "bytes", json: "string", typ: "string"}}, resource.MustParse("1"), true
	}
	return nil, nil, false
}

// timestamp: a Time travels as a metav1.Timestamp message.
func (t *table) timestamp() []field {
	return t.messages[t.message(reflect.TypeOf(metav1.Timestamp{}))]
}

func (t *table) field(owner reflect.Type, f reflect.StructField, tag string) field {
	where := owner.String() + "." + f.Name
	parts := strings.Split(tag, ",")
	if len(parts) < 2 {
		panic(fmt.Sprintf("%s: protobuf tag %q has no field number", where, tag))
	}
	number, err := strconv.Atoi(parts[1])
	if err != nil {
		panic(fmt.Sprintf("%s: protobuf tag %q has no field number", where, tag))
	}
	var casts []string
	for _, part := range parts[2:] {
		switch {
		case part == "opt" || part == "rep" || part == "req" || strings.HasPrefix(part, "name="):
		case strings.HasPrefix(part, "casttype="), strings.HasPrefix(part, "castkey="),
			strings.HasPrefix(part, "castvalue="):
			casts = append(casts, part)
		default:
			panic(fmt.Sprintf("%s: unknown protobuf tag option %q", where, part))
		}
	}
	out := field{number: number, cast: strings.Join(casts, ",")}
	out.json, out.flags = jsonName(where, f)

	goType := f.Type
	if goType.Kind() == reflect.Pointer {
		out.flags += "p"
		goType = goType.Elem()
	}
	switch {
	case goType.Kind() == reflect.Map:
		key, _ := t.valueType(goType.Key())
		value, _ := t.valueType(goType.Elem())
		out.wire, out.typ = "bytes", "map["+key+"]"+value
	case goType.Kind() == reflect.Slice && goType.Elem().Kind() != reflect.Uint8 && !isMessage(goType):
		out.flags += "r"
		out.wire = wireOf(goType.Elem())
		out.typ, _ = t.valueType(goType.Elem())
	default:
		var scalar bool
		out.wire = wireOf(goType)
		out.typ, scalar = t.valueType(goType)
		if !scalar && f.Anonymous && out.json == "" {
			out.flags += "i"
		}
	}
	return out
}

// jsonName reads the field's json tag as encoding/json does: its name (the Go field's when the
// tag names none; "" for an embedded struct, whose fields are inlined) and the omitempty and
// omitzero options.
func jsonName(where string, f reflect.StructField) (string, string) {
	flags := ""
	parts := strings.Split(f.Tag.Get("json"), ",")
	for _, option := range parts[1:] {
		switch option {
		case "omitempty":
			flags += "o"
		case "omitzero":
			flags += "z"
		case "inline": // not an encoding/json option: a nameless embedded struct is inlined anyway
		default:
			panic(fmt.Sprintf("%s: unknown json tag option %q", where, option))
		}
	}
	name := parts[0]
	if name == "" && !f.Anonymous {
		name = f.Name
	}
	return name, flags
}

// valueType names a single value's type: a scalar, or a message recorded on the way.
func (t *table) valueType(goType reflect.Type) (string, bool) {
	switch goType.Kind() {
	case reflect.String:
		return "string", true
	case reflect.Bool:
		return "bool", true
	case reflect.Int32:
		return "int32", true
	case reflect.Int64, reflect.Int:
		return "int64", true
	case reflect.Uint32:
		return "uint32", true
	case reflect.Uint64:
		return "uint64", true
	case reflect.Float32:
		return "float32", true
	case reflect.Float64:
		return "float64", true
	case reflect.Slice:
		if goType.Elem().Kind() == reflect.Uint8 {
			return "bytes", true
		}
		if isMessage(goType) {
			return t.message(goType), false
		}
	case reflect.Struct:
		return t.message(goType), false
	}
	panic(fmt.Sprintf("no protobuf form for Go type %s", goType))
}

func wireOf(goType reflect.Type) string {
	switch goType.Kind() {
	case reflect.Bool, reflect.Int32, reflect.Int64, reflect.Int, reflect.Uint32, reflect.Uint64:
		return "varint"
	case reflect.Float64:
		return "fixed64"
	case reflect.Float32:
		return "fixed32"
	}
	return "bytes"
}

// -- the table checked against the generated marshallers -----------------------------------------

var wireTypes = map[string]uint64{"varint": 0, "fixed64": 1, "bytes": 2, "fixed32": 5}

// check marshals every message with each of its fields set and compares what is on the wire
// (numbers, wire types, and map entries' key and value wire types) with the table.
func (t *table) check() error {
	var problems []string
	for name, fields := range t.messages {
		goType := t.goTypes[name]
		value := reflect.New(goType)
		t.fill(value.Elem(), 1)
		data, err := value.Interface().(protoMarshaler).Marshal()
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		seen, err := wireFields(data)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		for _, f := range fields {
			problems = append(problems, checkField(name, f, seen[f.number])...)
			delete(seen, f.number)
		}
		for number := range seen {
			problems = append(problems, fmt.Sprintf("%s: field %d is on the wire, not in the table", name, number))
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return errors.New("the table disagrees with the generated marshallers:\n" + strings.Join(problems, "\n"))
	}
	return nil
}

func checkField(message string, f field, values []wireValue) []string {
	where := fmt.Sprintf("%s.%s (%d)", message, f.json, f.number)
	if len(values) == 0 {
		return []string{where + ": set, yet not on the wire"}
	}
	var problems []string
	for _, v := range values {
		if v.wireType != wireTypes[f.wire] {
			problems = append(problems, fmt.Sprintf("%s: wire type %d, the table says %s", where, v.wireType, f.wire))
		}
	}
	if !strings.HasPrefix(f.typ, "map[") {
		return problems
	}
	key, value, _ := strings.Cut(strings.TrimPrefix(f.typ, "map["), "]")
	entry, err := wireFields(values[0].bytes)
	if err != nil {
		return append(problems, fmt.Sprintf("%s: map entry: %v", where, err))
	}
	for number, typ := range map[int]string{1: key, 2: value} {
		want := "bytes"
		if !strings.Contains(typ, ".") {
			want = scalarWire[typ]
		}
		if len(entry[number]) != 1 || entry[number][0].wireType != wireTypes[want] {
			problems = append(problems, fmt.Sprintf("%s: map entry field %d is not one %s", where, number, want))
		}
	}
	return problems
}

var scalarWire = map[string]string{
	"string": "bytes", "bytes": "bytes", "bool": "varint", "int32": "varint", "int64": "varint",
	"uint32": "varint", "uint64": "varint", "float32": "fixed32", "float64": "fixed64",
}

// fill sets every tagged field of a value to something other than its zero value, down to depth
// levels of nested structs (deeper ones stay zero, a pointer to one is set): a slice or map gets one
// element, a time, quantity or raw JSON a valid one.
func (t *table) fill(v reflect.Value, depth int) {
	if _, sample, ok := t.handWritten(v.Type()); ok {
		v.Set(reflect.ValueOf(sample))
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		t.fill(v.Elem(), depth)
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int32, reflect.Int64, reflect.Int:
		v.SetInt(1)
	case reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		t.fill(v.Index(0), depth)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		key, value := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		t.fill(key, depth)
		t.fill(value, depth)
		m.SetMapIndex(key, value)
		v.Set(m)
	case reflect.Struct:
		if depth == 0 {
			return
		}
		// RawExtension, FieldsV1, apiextensions JSON: their raw bytes are the JSON they marshal to
		if raw := v.FieldByName("Raw"); raw.IsValid() && reflect.PointerTo(v.Type()).Implements(jsonMarshalerType) {
			raw.SetBytes([]byte(`{"a":[1]}`))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if tag, ok := v.Type().Field(i).Tag.Lookup("protobuf"); ok && tag != "-" {
				t.fill(v.Field(i), depth-1)
			}
		}
	}
}

type wireValue struct {
	wireType uint64
	bytes    []byte
}

// wireFields splits a message's bytes into its fields, by number.
func wireFields(data []byte) (map[int][]wireValue, error) {
	out := map[int][]wireValue{}
	for len(data) > 0 {
		key, n := uvarint(data)
		if n == 0 {
			return nil, errors.New("truncated key")
		}
		data = data[n:]
		v := wireValue{wireType: key & 7}
		switch v.wireType {
		case 0:
			if _, n = uvarint(data); n == 0 {
				return nil, errors.New("truncated varint")
			}
		case 1:
			n = 8
		case 5:
			n = 4
		case 2:
			length, m := uvarint(data)
			if m == 0 || uint64(len(data)-m) < length {
				return nil, errors.New("truncated length-delimited field")
			}
			data = data[m:]
			n = int(length)
			v.bytes = data[:n]
		default:
			return nil, fmt.Errorf("wire type %d", v.wireType)
		}
		if len(data) < n {
			return nil, errors.New("truncated field")
		}
		data = data[n:]
		out[int(key>>3)] = append(out[int(key>>3)], v)
	}
	return out, nil
}

func uvarint(data []byte) (uint64, int) {
	var x uint64
	for i, b := range data {
		if i == 10 {
			return 0, 0
		}
		x |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return x, i + 1
		}
	}
	return 0, 0
}

// -- output --------------------------------------------------------------------------------------

// render writes one line per apiVersion and per message, sorted, so that a regeneration shows as a
// small diff.
func (t *table) render() ([]byte, error) {
	var b strings.Builder
	b.WriteString("{\n\"kinds\": {\n")
	if err := writeLines(&b, t.kinds, func(kinds map[string]string) any { return kinds }); err != nil {
		return nil, err
	}
	b.WriteString("},\n\"messages\": {\n")
	err := writeLines(&b, t.messages, func(fields []field) any {
		rows := make([][]any, 0, len(fields))
		for _, f := range fields {
			row := []any{f.number, f.wire, f.json, f.typ, f.flags}
			if f.cast != "" {
				row = append(row, f.cast)
			}
			rows = append(rows, row)
		}
		return rows
	})
	if err != nil {
		return nil, err
	}
	custom, err := json.Marshal(sortedKeys(t.custom))
	if err != nil {
		return nil, err
	}
	lists, err := json.Marshal(sortedKeys(t.lists))
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(&b, "},\n\"custom\": %s,\n\"lists\": %s\n}\n", custom, lists)
	return []byte(b.String()), nil
}

func writeLines[V any](b *strings.Builder, entries map[string]V, value func(V) any) error {
	for i, key := range sortedKeys(entries) {
		name, err := json.Marshal(key)
		if err != nil {
			return err
		}
		text, err := json.Marshal(value(entries[key]))
		if err != nil {
			return err
		}
		b.Write(name)
		b.WriteString(": ")
		b.Write(text)
		if i < len(entries)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	return nil
}

func sortedKeys[V any](entries map[string]V) []string {
	keys := make([]string, 0, len(entries))
	for key := range entries {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	return keys
}
