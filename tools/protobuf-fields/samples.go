package main

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

// sampleDepth: how deep the filled samples nest (a Pod's containers' probes' actions are set).
const sampleDepth = 6

// kindSample is one object of a kind, as a protobuf body (what a typed client sends) and as the
// JSON encoding/json makes of it (what the sandbox must read that body into).
type kindSample struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Protobuf   []byte          `json:"protobuf"`
	JSON       json.RawMessage `json:"json"`
}

type registered struct {
	scheme *runtime.Scheme
	gvk    schema.GroupVersionKind
}

// writeSamples writes, one JSON line each, an empty and a filled object of one kind of every
// message the table's kinds travel as: the decoder's test reads each body and compares.
func (t *table) writeSamples(path string, kinds map[string]registered) error {
	var out bytes.Buffer
	encoder := json.NewEncoder(&out)
	for _, name := range sortedKeys(kinds) {
		kind := kinds[name]
		for _, depth := range []int{0, sampleDepth} {
			obj := reflect.New(t.goTypes[name])
			if depth > 0 {
				t.fill(obj.Elem(), depth)
			}
			sample, ok, err := encode(kind, obj.Interface().(runtime.Object))
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			if err := encoder.Encode(sample); err != nil {
				return err
			}
		}
	}
	return os.WriteFile(path, out.Bytes(), 0o644)
}

func encode(kind registered, obj runtime.Object) (kindSample, bool, error) {
	obj.GetObjectKind().SetGroupVersionKind(kind.gvk)
	if obj.GetObjectKind().GroupVersionKind() != kind.gvk {
		return kindSample{}, false, nil // no TypeMeta (WatchEvent): never a request's body
	}
	var body bytes.Buffer
	if err := protobuf.NewSerializer(kind.scheme, kind.scheme).Encode(obj, &body); err != nil {
		return kindSample{}, false, err
	}
	text, err := json.Marshal(obj)
	if err != nil {
		return kindSample{}, false, err
	}
	apiVersion, kindName := kind.gvk.ToAPIVersionAndKind()
	return kindSample{apiVersion, kindName, body.Bytes(), text}, true, nil
}
