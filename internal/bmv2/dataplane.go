package bmv2

import (
	"context"
	"fmt"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// BMv2's dataplane service (services/p4/bm/dataplane_interface.proto in
// p4lang/behavioral-model) is described here by hand: the packet stream's
// messages (id 1, device_id 2, port 3, packet 4) by packetCodec, the port
// status call through dynamic messages. A few fields per message do not
// justify generated code.
//
//	service DataplaneInterface {
//	  rpc PacketStream(stream PacketStreamRequest) returns (stream PacketStreamResponse);
//	  rpc SetPortOperStatus(SetPortOperStatusRequest) returns (SetPortOperStatusResponse);
//	}
const (
	methodPacketStream  = "/p4.bm.DataplaneInterface/PacketStream"
	methodSetPortStatus = "/p4.bm.DataplaneInterface/SetPortOperStatus"
)

type dataplaneDescriptors struct {
	setStatus, setStatusResp protoreflect.MessageDescriptor
}

var (
	descOnce sync.Once
	descs    dataplaneDescriptors
	descErr  error
)

func field(name string, num int32, typ descriptorpb.FieldDescriptorProto_Type, typeName string) *descriptorpb.FieldDescriptorProto {
	f := &descriptorpb.FieldDescriptorProto{
		Name:     proto.String(name),
		Number:   proto.Int32(num),
		Label:    descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
		Type:     typ.Enum(),
		JsonName: proto.String(name),
	}
	if typeName != "" {
		f.TypeName = proto.String(typeName)
	}
	return f
}

func loadDescriptors() (dataplaneDescriptors, error) {
	descOnce.Do(func() {
		u64 := descriptorpb.FieldDescriptorProto_TYPE_UINT64
		u32 := descriptorpb.FieldDescriptorProto_TYPE_UINT32
		enm := descriptorpb.FieldDescriptorProto_TYPE_ENUM
		fd := &descriptorpb.FileDescriptorProto{
			Name:    proto.String("mrcgen/bmv2/dataplane_interface.proto"),
			Package: proto.String("p4.bm"),
			Syntax:  proto.String("proto3"),
			MessageType: []*descriptorpb.DescriptorProto{
				{Name: proto.String("SetPortOperStatusRequest"), Field: []*descriptorpb.FieldDescriptorProto{
					field("device_id", 1, u64, ""), field("port", 2, u32, ""), field("oper_status", 3, enm, ".p4.bm.PortOperStatus"),
				}},
				{Name: proto.String("SetPortOperStatusResponse")},
			},
			EnumType: []*descriptorpb.EnumDescriptorProto{{
				Name: proto.String("PortOperStatus"),
				Value: []*descriptorpb.EnumValueDescriptorProto{
					{Name: proto.String("OPER_STATUS_UNKNOWN"), Number: proto.Int32(0)},
					{Name: proto.String("OPER_STATUS_DOWN"), Number: proto.Int32(1)},
					{Name: proto.String("OPER_STATUS_UP"), Number: proto.Int32(2)},
				},
			}},
		}
		file, err := protodesc.NewFile(fd, nil)
		if err != nil {
			descErr = fmt.Errorf("bmv2 dataplane descriptors: %w", err)
			return
		}
		m := file.Messages()
		descs = dataplaneDescriptors{m.ByName("SetPortOperStatusRequest"), m.ByName("SetPortOperStatusResponse")}
	})
	return descs, descErr
}

// Packet is a packet entering or leaving a BMv2 port.
type Packet struct {
	Port uint32
	Data []byte
}

// Dataplane is a connection to one switch's dataplane service: it injects
// packets into its ports and receives what it transmits.
type Dataplane struct {
	deviceID uint64
	conn     *grpc.ClientConn
	stream   grpc.ClientStream
	sendMu   sync.Mutex
}

// OpenDataplane opens the packet stream of the switch whose dataplane
// service listens at conn (BMv2 accepts one stream at a time). The stream's
// messages are encoded and decoded by packetCodec, not through dynamic
// protobuf messages: the lab moves every packet of every link through here.
func OpenDataplane(ctx context.Context, conn *grpc.ClientConn, deviceID uint64) (*Dataplane, error) {
	stream, err := conn.NewStream(ctx, &grpc.StreamDesc{StreamName: "PacketStream", ServerStreams: true, ClientStreams: true},
		methodPacketStream, grpc.ForceCodecV2(packetCodec{}))
	if err != nil {
		return nil, fmt.Errorf("dataplane stream: %w", err)
	}
	return &Dataplane{deviceID: deviceID, conn: conn, stream: stream}, nil
}

// streamRequest is a PacketStreamRequest for packetCodec.
type streamRequest struct {
	deviceID uint64
	Packet
}

// Send injects a packet into a port.
func (dp *Dataplane) Send(p Packet) error {
	req := streamRequest{deviceID: dp.deviceID, Packet: p}
	dp.sendMu.Lock()
	defer dp.sendMu.Unlock()
	if err := dp.stream.SendMsg(&req); err != nil {
		return fmt.Errorf("dataplane send to port %d: %w", p.Port, err)
	}
	return nil
}

// Recv blocks for the next packet the switch transmits. The packet's Data
// is its own.
func (dp *Dataplane) Recv() (Packet, error) {
	var p Packet
	if err := dp.stream.RecvMsg(&p); err != nil {
		return Packet{}, err
	}
	return p, nil
}

// Field numbers of PacketStreamRequest and PacketStreamResponse.
const (
	fieldDeviceID = 2
	fieldPort     = 3
	fieldPacket   = 4
)

// packetCodec writes PacketStreamRequest (from *streamRequest) and reads
// PacketStreamResponse (into *Packet) in protobuf's wire format by hand.
// Its name is "proto", so the content type is the one BMv2 expects.
type packetCodec struct{}

func (packetCodec) Name() string { return "proto" }

func (packetCodec) Marshal(v any) (mem.BufferSlice, error) {
	r, ok := v.(*streamRequest)
	if !ok {
		return nil, fmt.Errorf("dataplane codec: cannot encode %T", v)
	}
	b := make([]byte, 0, len(r.Data)+24)
	if r.deviceID != 0 {
		b = protowire.AppendTag(b, fieldDeviceID, protowire.VarintType)
		b = protowire.AppendVarint(b, r.deviceID)
	}
	if r.Port != 0 {
		b = protowire.AppendTag(b, fieldPort, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(r.Port))
	}
	if len(r.Data) > 0 {
		b = protowire.AppendTag(b, fieldPacket, protowire.BytesType)
		b = protowire.AppendBytes(b, r.Data)
	}
	return mem.BufferSlice{mem.SliceBuffer(b)}, nil
}

func (packetCodec) Unmarshal(data mem.BufferSlice, v any) error {
	p, ok := v.(*Packet)
	if !ok {
		return fmt.Errorf("dataplane codec: cannot decode into %T", v)
	}
	// Materialize copies out of gRPC's buffers, which are reused once this
	// returns: the packet's bytes can stay a slice of this copy.
	b := data.Materialize()
	*p = Packet{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("dataplane codec: %w", protowire.ParseError(n))
		}
		b = b[n:]
		switch {
		case num == fieldPort && typ == protowire.VarintType:
			x, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return fmt.Errorf("dataplane codec: port: %w", protowire.ParseError(n))
			}
			p.Port = uint32(x)
			b = b[n:]
		case num == fieldPacket && typ == protowire.BytesType:
			x, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return fmt.Errorf("dataplane codec: packet: %w", protowire.ParseError(n))
			}
			p.Data = x[:len(x):len(x)]
			b = b[n:]
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return fmt.Errorf("dataplane codec: field %d: %w", num, protowire.ParseError(n))
			}
			b = b[n:]
		}
	}
	return nil
}

// CloseSend ends the stream from our side.
func (dp *Dataplane) CloseSend() error { return dp.stream.CloseSend() }

// SetPortStatus takes a port up or down (BMv2 notifies its port monitor;
// packets are still accepted and transmitted: the lab's wires cut links).
func SetPortStatus(ctx context.Context, conn *grpc.ClientConn, deviceID uint64, port uint32, up bool) error {
	d, err := loadDescriptors()
	if err != nil {
		return err
	}
	req := dynamicpb.NewMessage(d.setStatus)
	f := req.Descriptor().Fields()
	req.Set(f.ByName("device_id"), protoreflect.ValueOfUint64(deviceID))
	req.Set(f.ByName("port"), protoreflect.ValueOfUint32(port))
	status := protoreflect.EnumNumber(1)
	if up {
		status = 2
	}
	req.Set(f.ByName("oper_status"), protoreflect.ValueOfEnum(status))
	resp := dynamicpb.NewMessage(d.setStatusResp)
	if err := conn.Invoke(ctx, methodSetPortStatus, req, resp); err != nil {
		return fmt.Errorf("set port %d %s: %w", port, map[bool]string{true: "up", false: "down"}[up], err)
	}
	return nil
}
