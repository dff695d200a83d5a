package mrcpkt_test

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
)

// FuzzParse: Parse never panics, and whatever it accepts serializes to a
// frame that parses to the same Packet and serializes to the same bytes.
// Crashers the fuzzer finds land in testdata/fuzz/FuzzParse and are
// replayed by every go test run.
func FuzzParse(f *testing.F) {
	for _, p := range packets(f) {
		frame, err := mrcpkt.Serialize(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(frame)
	}
	_, data := encapsulatedData(f)
	f.Add(data)
	f.Add(data[:mrcpkt.TrimLen])
	f.Add(trim(data, mrcpkt.TrimLen, 13))
	f.Add(data[:120])
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, frame []byte) {
		in := append([]byte(nil), frame...)
		p, err := mrcpkt.Parse(frame)
		if !bytes.Equal(frame, in) {
			t.Fatal("Parse modified its input")
		}
		if err != nil {
			if p != nil {
				t.Fatalf("Parse returned a Packet with error %v", err)
			}
			return
		}
		out, err := mrcpkt.Serialize(p)
		if err != nil {
			t.Fatalf("Serialize(Parse(%x)) = %v\npacket %+v", frame, err, p)
		}
		q, err := mrcpkt.Parse(out)
		if err != nil {
			t.Fatalf("Parse(Serialize(Parse(%x))) = %v\nserialized %x", frame, err, out)
		}
		if !reflect.DeepEqual(p, q) {
			t.Fatalf("round trip changed the packet\nfirst  %+v\nsecond %+v", p, q)
		}
		// The frame differs from out only in reserved bits, so lengths agree.
		if len(out) != len(frame) {
			t.Fatalf("serialized %d bytes from a %d-byte frame", len(out), len(frame))
		}
		again, err := mrcpkt.Serialize(q)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("Serialize is not stable: %v\n%x\n%x", err, out, again)
		}
	})
}
