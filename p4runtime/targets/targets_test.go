package targets

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseAndResolve(t *testing.T) {
	f, err := Parse([]byte(`
defaults: {insecure: true, election_id: 7, role: ops}
devices:
  p0-t0-0: {address: "127.0.0.1:1", device_id: 1}
  p0-t1-0: {address: "127.0.0.1:2", device_id: 2, election_id: 9, ca: ca.pem}
`))
	if err != nil {
		t.Fatal(err)
	}
	a := f.Resolve("p0-t0-0")
	if a.ElectionID != 7 || a.Role != "ops" || a.Insecure == nil || !*a.Insecure {
		t.Errorf("defaults not applied: %+v", a)
	}
	if b := f.Resolve("p0-t1-0"); b.ElectionID != 9 || b.CAFile != "ca.pem" {
		t.Errorf("device values lost: %+v", b)
	}
	if got := strings.Join(f.Names(), ","); got != "p0-t0-0,p0-t1-0" {
		t.Errorf("names %s", got)
	}
	var buf bytes.Buffer
	if err := f.Write(&buf); err != nil {
		t.Fatal(err)
	}
	again, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatalf("round trip: %v\n%s", err, buf.String())
	}
	for _, name := range f.Names() {
		x, y := f.Resolve(name), again.Resolve(name)
		if x.Address != y.Address || x.DeviceID != y.DeviceID || x.ElectionID != y.ElectionID || x.Role != y.Role ||
			x.CAFile != y.CAFile || (x.Insecure == nil) != (y.Insecure == nil) || x.Insecure != nil && *x.Insecure != *y.Insecure {
			t.Errorf("%s: round trip %+v -> %+v", name, x, y)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"devices:\n  x: {address: a:1}\n", "device x: device_id 0"},
		{"devices:\n  x: {device_id: 1}\n", "device x: no address"},
		{"devices:\n  x: {address: a:1, device_id: 1, port: 3}\n", "field port not found"},
		{"device: {}\n", "field device not found"},
	} {
		_, err := Parse([]byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
