package bmv2

import (
	"bytes"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
)

func TestPacketCodec(t *testing.T) {
	c := packetCodec{}
	out, err := c.Marshal(&streamRequest{deviceID: 7, Packet: Packet{Port: 3, Data: []byte("frame")}})
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	want = protowire.AppendTag(want, 2, protowire.VarintType)
	want = protowire.AppendVarint(want, 7)
	want = protowire.AppendTag(want, 3, protowire.VarintType)
	want = protowire.AppendVarint(want, 3)
	want = protowire.AppendTag(want, 4, protowire.BytesType)
	want = protowire.AppendBytes(want, []byte("frame"))
	if got := out.Materialize(); !bytes.Equal(got, want) {
		t.Errorf("request %x, want %x", got, want)
	}

	// A response: id and device_id are skipped, port and packet read, a
	// port of 0 is absent on the wire.
	var resp []byte
	resp = protowire.AppendTag(resp, 1, protowire.VarintType)
	resp = protowire.AppendVarint(resp, 99)
	resp = protowire.AppendTag(resp, 2, protowire.VarintType)
	resp = protowire.AppendVarint(resp, 7)
	resp = protowire.AppendTag(resp, 4, protowire.BytesType)
	resp = protowire.AppendBytes(resp, []byte{1, 2, 3})
	buf := append([]byte(nil), resp...)
	var p Packet
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(buf)}, &p); err != nil {
		t.Fatal(err)
	}
	if p.Port != 0 || !bytes.Equal(p.Data, []byte{1, 2, 3}) {
		t.Errorf("response decoded as %+v", p)
	}
	buf[len(buf)-1] = 0 // gRPC reuses its buffer: the packet must not see it
	if p.Data[2] != 3 {
		t.Error("decoded packet aliases the receive buffer")
	}
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(resp[:len(resp)-1])}, &p); err == nil {
		t.Error("a truncated response decoded")
	}
}
