package p4info_test

import (
	"errors"
	"strings"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/mrc-fabric/mrcgen/p4runtime/p4info"
	"github.com/mrc-fabric/mrcgen/p4runtime/p4rttest"
)

func TestValidate(t *testing.T) {
	idx, err := p4info.New(p4rttest.SampleP4Info())
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.Validate(p4rttest.L2Entry(0xaabbccddeeff, 511)); err != nil {
		t.Fatalf("valid entry refused: %v", err)
	}
	te := func(mut func(*p4v1.TableEntry)) *p4v1.Entity {
		e := p4rttest.L2Entry(1, 1)
		mut(e.GetTableEntry())
		return e
	}
	for _, tc := range []struct {
		name string
		e    *p4v1.Entity
		want string
	}{
		{"unknown table", te(func(t *p4v1.TableEntry) { t.TableId = 0x02000099 }), "table id 0x2000099"},
		{"port too wide", p4rttest.L2Entry(1, 512), "param port: value needs 10 bits, param is 9 bits"},
		{"mac too wide", te(func(t *p4v1.TableEntry) { t.Match[0].GetExact().Value = []byte{1, 0, 0, 0, 0, 0, 0} }), "needs 49 bits"},
		{"missing exact", te(func(t *p4v1.TableEntry) { t.Match = nil }), "exact match field hdr.ethernet.dstAddr is missing"},
		{"unknown field", te(func(t *p4v1.TableEntry) { t.Match[0].FieldId = 9 }), "match field id 9"},
		{"priority", te(func(t *p4v1.TableEntry) { t.Priority = 4 }), "takes no priority"},
		{"unknown action", te(func(t *p4v1.TableEntry) { t.GetAction().GetAction().ActionId = 0x01000099 }), "action id 0x1000099"},
		{"missing param", te(func(t *p4v1.TableEntry) { t.GetAction().GetAction().Params = nil }), "param port is missing"},
		{"no action", te(func(t *p4v1.TableEntry) { t.Action = nil }), "no action"},
		{"counter entity", &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{}}, "unsupported entity kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := idx.Validate(tc.e)
			if !errors.Is(err, p4info.ErrInvalidEntity) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want ErrInvalidEntity containing %q", err, tc.want)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	idx, err := p4info.New(p4rttest.SampleP4Info())
	if err != nil {
		t.Fatal(err)
	}
	got := idx.Describe(p4rttest.L2Entry(0x0a0b0c0d0e0f, 300))
	want := "ingress.l2_fwd hdr.ethernet.dstAddr=0a:0b:0c:0d:0e:0f -> ingress.set_port(port=300)"
	if got != want {
		t.Fatalf("Describe = %q, want %q", got, want)
	}
	if got := p4info.FormatValue([]byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 128); got != "2001:db8::1" {
		t.Fatalf("IPv6 FormatValue = %q", got)
	}
}

func TestNewRejectsDuplicates(t *testing.T) {
	info := p4rttest.SampleP4Info()
	info.Tables = append(info.Tables, info.Tables[0])
	if _, err := p4info.New(info); err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Fatalf("New with a duplicate table = %v", err)
	}
}
