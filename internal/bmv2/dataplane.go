package bmv2

import (
	"context"
	"fmt"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// BMv2's dataplane service (services/p4/bm/dataplane_interface.proto in
// p4lang/behavioral-model) is described here by hand and used through
// dynamic messages: four fields per message do not justify generated code.
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
	request, response, setStatus, setStatusResp protoreflect.MessageDescriptor
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
		byt := descriptorpb.FieldDescriptorProto_TYPE_BYTES
		enm := descriptorpb.FieldDescriptorProto_TYPE_ENUM
		packetFields := []*descriptorpb.FieldDescriptorProto{
			field("id", 1, u64, ""), field("device_id", 2, u64, ""), field("port", 3, u32, ""), field("packet", 4, byt, ""),
		}
		fd := &descriptorpb.FileDescriptorProto{
			Name:    proto.String("mrcgen/bmv2/dataplane_interface.proto"),
			Package: proto.String("p4.bm"),
			Syntax:  proto.String("proto3"),
			MessageType: []*descriptorpb.DescriptorProto{
				{Name: proto.String("PacketStreamRequest"), Field: packetFields},
				{Name: proto.String("PacketStreamResponse"), Field: packetFields},
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
		descs = dataplaneDescriptors{m.ByName("PacketStreamRequest"), m.ByName("PacketStreamResponse"),
			m.ByName("SetPortOperStatusRequest"), m.ByName("SetPortOperStatusResponse")}
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
	d        dataplaneDescriptors
	sendMu   sync.Mutex
}

// OpenDataplane opens the packet stream of the switch whose dataplane
// service listens at conn (BMv2 accepts one stream at a time).
func OpenDataplane(ctx context.Context, conn *grpc.ClientConn, deviceID uint64) (*Dataplane, error) {
	d, err := loadDescriptors()
	if err != nil {
		return nil, err
	}
	stream, err := conn.NewStream(ctx, &grpc.StreamDesc{StreamName: "PacketStream", ServerStreams: true, ClientStreams: true}, methodPacketStream)
	if err != nil {
		return nil, fmt.Errorf("dataplane stream: %w", err)
	}
	return &Dataplane{deviceID: deviceID, conn: conn, stream: stream, d: d}, nil
}

// Send injects a packet into a port.
func (dp *Dataplane) Send(p Packet) error {
	m := dynamicpb.NewMessage(dp.d.request)
	f := m.Descriptor().Fields()
	m.Set(f.ByName("device_id"), protoreflect.ValueOfUint64(dp.deviceID))
	m.Set(f.ByName("port"), protoreflect.ValueOfUint32(p.Port))
	m.Set(f.ByName("packet"), protoreflect.ValueOfBytes(p.Data))
	dp.sendMu.Lock()
	defer dp.sendMu.Unlock()
	if err := dp.stream.SendMsg(m); err != nil {
		return fmt.Errorf("dataplane send to port %d: %w", p.Port, err)
	}
	return nil
}

// Recv blocks for the next packet the switch transmits.
func (dp *Dataplane) Recv() (Packet, error) {
	m := dynamicpb.NewMessage(dp.d.response)
	if err := dp.stream.RecvMsg(m); err != nil {
		return Packet{}, err
	}
	f := m.Descriptor().Fields()
	return Packet{
		Port: uint32(m.Get(f.ByName("port")).Uint()),
		Data: append([]byte(nil), m.Get(f.ByName("packet")).Bytes()...),
	}, nil
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
