package sonic_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/mrc-fabric/mrcgen/compiler/sonic"
)

// indentJSON is what Marshal must write: encoding/json's own bytes.
func indentJSON(t testing.TB, fr sonic.Fragment) []byte {
	t.Helper()
	want, err := json.MarshalIndent(fr, "", "    ")
	if err != nil {
		t.Fatal(err)
	}
	return append(want, '\n')
}

func TestMarshalIsEncodingJSON(t *testing.T) {
	for _, preset := range []string{"tiny", "small"} {
		x := exporter(t, preset, nil)
		for _, s := range x.Plan.Switches() {
			fr := x.Switch(s)
			got, err := sonic.Marshal(fr)
			if err != nil {
				t.Fatal(err)
			}
			if want := indentJSON(t, fr); !bytes.Equal(got, want) {
				t.Fatalf("%s %s: Marshal differs from encoding/json:\n%s\nwant\n%s", preset, x.Plan.Name(s), got, want)
			}
		}
	}
	odd := []sonic.Fragment{
		nil,
		{},
		{"EMPTY": {}},
		{"NIL": nil},
		{"T": {"k": nil, "e": {}}},
		{"T": {"a|b": {"q\"uote": "back\\slash", "html": "<a&b>", "ctl": "\t\n\x01", "utf8": "µ\u2028", "bad": "\xff"}}},
	}
	for _, fr := range odd {
		got, err := sonic.Marshal(fr)
		if err != nil {
			t.Fatal(err)
		}
		if want := indentJSON(t, fr); !bytes.Equal(got, want) {
			t.Errorf("%#v: got\n%s\nwant\n%s", fr, got, want)
		}
	}
}

func FuzzMarshalIsEncodingJSON(f *testing.F) {
	f.Add("SRV6_MY_SIDS", "mrc|fcbb:bb00:400::/48", "action", "uN")
	f.Add("", "", "", "")
	f.Add("<", "\x00", "\u2028", "\xff\xfe")
	f.Fuzz(func(t *testing.T, table, key, field, value string) {
		fr := sonic.Fragment{table: {key: {field: value, "x": key}}, "z" + table: {value: {}}}
		got, err := sonic.Marshal(fr)
		if err != nil {
			t.Fatal(err)
		}
		if want := indentJSON(t, fr); !bytes.Equal(got, want) {
			t.Fatalf("got\n%q\nwant\n%q", got, want)
		}
	})
}
