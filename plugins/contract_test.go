package plugins_test

import (
	"context"
	"encoding/json"
	"io"
	"reflect"
	"testing"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/toolbox-dev/toolbox/plugins"
	"github.com/toolbox-dev/toolbox/plugins/sdk"
	pb "github.com/toolbox-dev/toolbox/plugins/sdk/proto"
	"github.com/toolbox-dev/toolbox/protocol"
)

// inProcess serves tool through the real gRPC contract, client and server
// in this process (go-plugin's TestPluginGRPCConn).
func inProcess(t *testing.T, tool sdk.Tool) pb.ToolClient {
	t.Helper()
	client, _ := plugin.TestPluginGRPCConn(t, false, plugins.PluginSet(sdk.NewServer(tool)))
	// Closing the client stops the server too (go-plugin's controller);
	// stopping it again here would race inside go-plugin.
	t.Cleanup(func() { client.Close() })
	raw, err := client.Dispense(plugins.PluginName)
	if err != nil {
		t.Fatal(err)
	}
	tc, ok := raw.(pb.ToolClient)
	if !ok {
		t.Fatalf("dispensed %T", raw)
	}
	return tc
}

func recvAll(t *testing.T, recv func() (*pb.RunResponse, error)) (events []string, exit *pb.Exit) {
	t.Helper()
	for {
		m, err := recv()
		if err == io.EOF {
			return events, exit
		}
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		if exit != nil {
			t.Fatalf("message after the exit: %v", m)
		}
		switch m := m.GetMsg().(type) {
		case *pb.RunResponse_Event:
			events = append(events, string(m.Event))
		case *pb.RunResponse_Chunk:
			events = append(events, "chunk:"+string(m.Chunk))
		case *pb.RunResponse_Exit:
			exit = m.Exit
		}
	}
}

func TestContractDescribeIsTheToolsDocument(t *testing.T) {
	tc := inProcess(t, fakeTool{})
	resp, err := tc.Describe(context.Background(), &pb.DescribeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var got protocol.Describe
	if err := json.Unmarshal(resp.GetDocument(), &got); err != nil {
		t.Fatal(err)
	}
	if want := (fakeTool{}).Describe(); !reflect.DeepEqual(got, want) {
		t.Errorf("describe over gRPC:\n%+v\nwant\n%+v", got, want)
	}
}

func TestContractRunStreamsThenExits(t *testing.T) {
	tc := inProcess(t, fakeTool{})
	stream, err := tc.Run(context.Background(), &pb.RunRequest{Command: "stream", Args: []byte(`{"n": 2}`)})
	if err != nil {
		t.Fatal(err)
	}
	events, exit := recvAll(t, stream.Recv)
	if len(events) != 2 || events[0] != `{"i":0}` || exit == nil || exit.Code != 0 || exit.Error != "" {
		t.Errorf("events %q, exit %v", events, exit)
	}

	stream, err = tc.Run(context.Background(), &pb.RunRequest{Command: "fail"})
	if err != nil {
		t.Fatal(err)
	}
	if _, exit := recvAll(t, stream.Recv); exit.GetCode() != 4 || exit.GetError() != "frob failed" {
		t.Errorf("fail: exit %v", exit)
	}
}

func TestContractRefusesInvalidArguments(t *testing.T) {
	tc := inProcess(t, fakeTool{})
	for _, args := range []string{`{}`, `{"text": 1, "more": 2}`, `[1]`, `{"text": "a"} x`} {
		stream, err := tc.Run(context.Background(), &pb.RunRequest{Args: []byte(args)})
		if err == nil {
			_, err = stream.Recv()
		}
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("Run(%s): %v, want InvalidArgument", args, err)
		}
	}
}

// oneshotOnly is a tool that is not a service.
type oneshotOnly struct{ sdk.Tool }

func TestContractSessionNeedsAService(t *testing.T) {
	tc := inProcess(t, oneshotOnly{fakeTool{}})
	stream, err := tc.Session(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_ = stream.Send(&pb.SessionRequest{Msg: &pb.SessionRequest_Start{Start: &pb.RunRequest{Args: []byte(`{"text":"x"}`)}}})
	if _, err := stream.Recv(); status.Code(err) != codes.Unimplemented {
		t.Errorf("Session of a oneshot tool: %v, want Unimplemented", err)
	}
}

func TestContractSessionMustStartWithStart(t *testing.T) {
	tc := inProcess(t, fakeTool{})
	stream, err := tc.Session(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_ = stream.Send(&pb.SessionRequest{Msg: &pb.SessionRequest_Event{Event: []byte(`{}`)}})
	if _, err := stream.Recv(); status.Code(err) != codes.InvalidArgument {
		t.Errorf("Session starting with an event: %v, want InvalidArgument", err)
	}
}

func TestGRPCPluginWithoutImpl(t *testing.T) {
	if err := (&plugins.GRPCPlugin{}).GRPCServer(nil, nil); err == nil {
		t.Errorf("serving without Impl succeeded")
	}
}
