package fabric_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
)

type jsonSchema struct {
	Type                 string                 `json:"type"`
	AdditionalProperties *bool                  `json:"additionalProperties"`
	MinProperties        int                    `json:"minProperties"`
	Properties           map[string]*jsonSchema `json:"properties"`
	Enum                 []string               `json:"enum"`
	Minimum              *float64               `json:"minimum"`
	Maximum              *float64               `json:"maximum"`
	Pattern              string                 `json:"pattern"`
}

func loadSchema(t *testing.T) *jsonSchema {
	t.Helper()
	var s jsonSchema
	if err := json.Unmarshal(fabric.JSONSchema(), &s); err != nil {
		t.Fatalf("schema.json: %v", err)
	}
	return &s
}

// TestJSONSchemaMatchesDescription proves that schema.json and the
// Description struct describe the same file: the same keys at every level,
// the same kinds of value, and no other key allowed anywhere.
func TestJSONSchemaMatchesDescription(t *testing.T) {
	var check func(path string, s *jsonSchema, typ reflect.Type)
	check = func(path string, s *jsonSchema, typ reflect.Type) {
		if s == nil {
			t.Errorf("%s: no schema", path)
			return
		}
		switch typ.Kind() {
		case reflect.Struct:
			if s.Type != "object" {
				t.Errorf("%s: schema type %q, want object", path, s.Type)
			}
			if s.AdditionalProperties == nil || *s.AdditionalProperties {
				t.Errorf("%s: additionalProperties must be false", path)
			}
			var keys []string
			for i := 0; i < typ.NumField(); i++ {
				sf := typ.Field(i)
				key, _, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
				if key == "" || key == "-" {
					t.Errorf("%s.%s: no yaml key", path, sf.Name)
					continue
				}
				if jk, _, _ := strings.Cut(sf.Tag.Get("json"), ","); jk != key {
					t.Errorf("%s.%s: yaml key %q, json key %q", path, sf.Name, key, jk)
				}
				keys = append(keys, key)
				check(strings.TrimPrefix(path+"."+key, "."), s.Properties[key], sf.Type)
			}
			var props []string
			for k := range s.Properties {
				props = append(props, k)
			}
			sort.Strings(keys)
			sort.Strings(props)
			if !slices.Equal(keys, props) {
				t.Errorf("%s: schema properties %v, Description keys %v", path, props, keys)
			}
		case reflect.Int:
			if s.Type != "integer" {
				t.Errorf("%s: schema type %q, want integer", path, s.Type)
			}
		case reflect.String:
			if s.Type != "string" {
				t.Errorf("%s: schema type %q, want string", path, s.Type)
			}
		default:
			t.Errorf("%s: Go type %s has no schema rule in this test", path, typ)
		}
	}
	s := loadSchema(t)
	check("", s, reflect.TypeFor[fabric.Description]())

	// The base enum is the preset list.
	if b := s.Properties["base"]; b == nil {
		t.Errorf("schema has no base")
	} else if enum := slices.Sorted(slices.Values(b.Enum)); !slices.Equal(enum, fabric.PresetNames()) {
		t.Errorf("schema base enum %v, presets %v", b.Enum, fabric.PresetNames())
	}
}

// validate checks a JSON document against the subset of JSON Schema that
// schema.json uses.
func validate(s *jsonSchema, v any, path string) []string {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, path+": "+fmt.Sprintf(format, args...)) }
	switch s.Type {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			bad("not an object")
			return errs
		}
		if len(m) < s.MinProperties {
			bad("%d properties, fewer than %d", len(m), s.MinProperties)
		}
		for k, x := range m {
			sub, ok := s.Properties[k]
			if !ok {
				if s.AdditionalProperties == nil || *s.AdditionalProperties {
					continue
				}
				bad("unknown property %q", k)
				continue
			}
			errs = append(errs, validate(sub, x, path+"."+k)...)
		}
	case "integer":
		n, ok := v.(float64)
		if !ok || n != float64(int64(n)) {
			bad("not an integer")
			return errs
		}
		if s.Minimum != nil && n < *s.Minimum {
			bad("%v < minimum %v", n, *s.Minimum)
		}
		if s.Maximum != nil && n > *s.Maximum {
			bad("%v > maximum %v", n, *s.Maximum)
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			bad("not a string")
			return errs
		}
		if s.Pattern != "" && !regexp.MustCompile(s.Pattern).MatchString(str) {
			bad("%q does not match %s", str, s.Pattern)
		}
		if len(s.Enum) > 0 && !slices.Contains(s.Enum, str) {
			bad("%q not in %v", str, s.Enum)
		}
	}
	return errs
}

func toJSON(t *testing.T, d fabric.Description) any {
	t.Helper()
	data, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestJSONSchemaAgreesWithResolve runs the schema and the Go checks on the
// same descriptions: every preset passes both; a single-field mistake the
// schema can express fails both.
func TestJSONSchemaAgreesWithResolve(t *testing.T) {
	s := loadSchema(t)
	for _, name := range fabric.PresetNames() {
		d, _ := fabric.Preset(name)
		d.Base = name
		if errs := validate(s, toJSON(t, d), "$"); len(errs) > 0 {
			t.Errorf("preset %s fails the schema: %v", name, errs)
		}
	}
	for _, tc := range []struct {
		name   string
		mutate func(*fabric.Description)
	}{
		{"name", func(d *fabric.Description) { d.Name = "Tiny" }},
		{"planes", func(d *fabric.Description) { d.Planes = 0 }},
		{"switch.ports", func(d *fabric.Description) { d.Switch.Ports = 513 }},
		{"usid.kind_bits", func(d *fabric.Description) { d.USID.KindBits, d.USID.IndexBits = 1, 11 }},
		{"ev.set_size", func(d *fabric.Description) { d.EV.SetSize = 4098 }},
		{"dscp.control", func(d *fabric.Description) { d.DSCP.Control = 64 }},
		{"trim.size_bytes", func(d *fabric.Description) { d.Trim.SizeBytes = 133 }},
		{"trim.threshold_packets", func(d *fabric.Description) { d.Trim.ThresholdPackets = 1 << 19 }},
		{"links.nic_t0_ns", func(d *fabric.Description) { d.Links.NICT0Ns = -1 }},
		{"links.t0_t1_ns", func(d *fabric.Description) { d.Links.T0T1Ns = 1_000_001 }},
		{"base", func(d *fabric.Description) { d.Base = "huge" }},
	} {
		d := fabric.Default()
		tc.mutate(&d)
		errs := validate(s, toJSON(t, d), "$")
		if len(errs) != 1 || !strings.HasPrefix(errs[0], "$."+tc.name+":") {
			t.Errorf("%s: schema says %v, want one error on it", tc.name, errs)
		}
		if tc.name == "base" {
			continue // Resolve does not see base; Decode refuses it (TestDecodeRejects)
		}
		_, err := fabric.Resolve(d)
		if fe := fieldErrors(err); len(fe) != 1 || fe[0].Field != tc.name {
			t.Errorf("%s: Resolve says %v, want one error on it", tc.name, err)
		}
	}
}

// TestJSONSchemaAgreesWithDecode runs the schema and Decode on the same
// files: what the schema refuses about the file's shape (an empty file, an
// unknown key, a value of the wrong type) Decode refuses too, and what
// Decode accepts the schema accepts.
func TestJSONSchemaAgreesWithDecode(t *testing.T) {
	s := loadSchema(t)
	for _, tc := range []struct {
		yaml string
		ok   bool
	}{
		{"base: tiny\n", true},
		{"planes: 2\nt0: {count: 2}\n", true},
		{"{}\n", false},
		{"planez: 2\n", false},
		{"t0: {cont: 2}\n", false},
		{"planes: two\n", false},
		{"planes: \"2\"\n", false},
		{"planes: 2.5\n", false},
		{"usid: {block: [1]}\n", false},
		{"t0: 8\n", false},
		{"base: [tiny]\n", false},
		{"links: {nic_t0_ns: 10, t0_t1_ns: 150}\n", true},
		{"links: {t0_t1: 150}\n", false},
		{"links: {t0_t1_ns: 150ns}\n", false},
	} {
		var v any
		if err := yaml.Unmarshal([]byte(tc.yaml), &v); err != nil {
			t.Fatalf("%q: %v", tc.yaml, err)
		}
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%q: %v", tc.yaml, err)
		}
		var doc any
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		schemaErrs := validate(s, doc, "$")
		_, decodeErr := fabric.Decode([]byte(tc.yaml))
		if (len(schemaErrs) == 0) != tc.ok || (decodeErr == nil) != tc.ok {
			t.Errorf("%q: schema says %v, Decode says %v; want ok=%v", tc.yaml, schemaErrs, decodeErr, tc.ok)
		}
	}
}

// TestJSONSchemaDraft2020 checks schema.json with a full draft 2020-12
// implementation (the tests above use the subset it is written in): the
// schema compiles against its meta-schema, every preset's file is valid,
// and files with a value out of range or an unknown key are not.
func TestJSONSchemaDraft2020(t *testing.T) {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(fabric.JSONSchema())))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("schema.json")
	if err != nil {
		t.Fatalf("schema.json does not compile: %v", err)
	}
	instance := func(v any) any {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(string(data)))
		if err != nil {
			t.Fatal(err)
		}
		return inst
	}
	for _, name := range fabric.PresetNames() {
		d, _ := fabric.Preset(name)
		d.Base = name
		if err := sch.Validate(instance(d)); err != nil {
			t.Errorf("preset %s: %v", name, err)
		}
	}
	for _, tc := range []struct {
		yaml string
		ok   bool
	}{
		{"links: {nic_t0_ns: 0, t0_t1_ns: 1000000}\n", true},
		{"links: {nic_t0_ns: -1}\n", false},
		{"links: {t0_t1_ns: 1000001}\n", false},
		{"links: {t0_t1_ns: 1.5}\n", false},
		{"links: {nic_t0: 10}\n", false},
		{"linkz: {nic_t0_ns: 10}\n", false},
		{"base: tiny\nt0: {count: 0}\n", false},
	} {
		var v any
		if err := yaml.Unmarshal([]byte(tc.yaml), &v); err != nil {
			t.Fatalf("%q: %v", tc.yaml, err)
		}
		if err := sch.Validate(instance(v)); (err == nil) != tc.ok {
			t.Errorf("%q: schema says %v, want ok=%v", tc.yaml, err, tc.ok)
		}
	}
}
