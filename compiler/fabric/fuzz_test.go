package fabric_test

import (
	"errors"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
)

// FuzzDecode feeds arbitrary files to the description parser. It must never
// panic; an error must wrap ErrInvalid; and a file that resolves must
// describe a fabric that resolves again, to the same Fabric, both directly
// and through its YAML rendering (what a build writes as fabric.yaml).
//
// Run it with: go test -run '^$' -fuzz FuzzDecode ./compiler/fabric
func FuzzDecode(f *testing.F) {
	for _, name := range fabric.PresetNames() {
		d, err := fabric.Preset(name)
		if err != nil {
			f.Fatal(err)
		}
		text, err := yaml.Marshal(d)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(text)
		f.Add([]byte("base: " + name + "\nname: x\n"))
	}
	for _, s := range []string{
		"",
		"planes: 4\nnic: {speed_gbps: 400}\n",
		"planez: 2\n",
		"planes: two\n",
		"name: a\n---\nname: b\n",
		"base: huge\n",
		"base: [small]\n",
		"usid: {block: 'fcbb:bb00:1::/32', plane_bits: 4, kind_bits: 1, index_bits: 11}\n",
		"hosts: {prefix: 'fcbb:bb00::/64'}\n",
		"ev: {set_size: 15, plane_bits: 4, t1_bits: 10, salt_bits: 17}\n",
		"t0: {count: 9223372036854775807, down_ports: 9223372036854775807, up_ports: 2}\n",
		"a: &a [*a, *a]\n",
		"t0: &a {<<: [*a, *a], count: 1}\n",
		mergeBomb,
		"planes: 2.5\nname:\nt0: {cont: 1}\n",
		"- 1\n- 2\n",
		"name: [lab\n",
		"\x00\xff",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := fabric.Decode(data)
		if err != nil {
			if !errors.Is(err, fabric.ErrInvalid) {
				t.Fatalf("Decode error does not wrap ErrInvalid: %v", err)
			}
			return
		}
		fab, err := fabric.Resolve(d)
		if err != nil {
			if !errors.Is(err, fabric.ErrInvalid) {
				t.Fatalf("Resolve error does not wrap ErrInvalid: %v", err)
			}
			if len(fieldErrors(err)) == 0 {
				t.Fatalf("Resolve error names no field: %v", err)
			}
			return
		}
		again, err := fabric.Resolve(fab.Describe())
		if err != nil {
			t.Fatalf("Describe() of a valid fabric does not resolve: %v\n%+v", err, fab.Describe())
		}
		if *again != *fab {
			t.Fatalf("Resolve(Describe()) = %+v\nwant %+v", again, fab)
		}
		text, err := yaml.Marshal(fab.Describe())
		if err != nil {
			t.Fatal(err)
		}
		d2, err := fabric.Decode(text)
		if err != nil {
			t.Fatalf("the rendered description does not decode: %v\n%s", err, text)
		}
		viaYAML, err := fabric.Resolve(d2)
		if err != nil || *viaYAML != *fab {
			t.Fatalf("the rendered description resolves to %+v, %v\nwant %+v\n%s", viaYAML, err, fab, text)
		}
	})
}
