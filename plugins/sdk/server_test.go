package sdk

import (
	"errors"
	"testing"

	pb "github.com/toolbox-dev/toolbox/plugins/sdk/proto"
)

func TestEmitterChunksThenRefusesAfterExit(t *testing.T) {
	var sent []*pb.RunResponse
	e := &emitter{send: func(m *pb.RunResponse) error { sent = append(sent, m); return nil }}
	big := make([]byte, maxChunk*2+10)
	if n, err := e.Write(big); n != len(big) || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if len(sent) != 3 || len(sent[0].GetChunk()) != maxChunk || len(sent[2].GetChunk()) != 10 {
		t.Errorf("sent %d messages", len(sent))
	}
	if err := e.exit(0, errors.New("late")); err != nil {
		t.Fatal(err)
	}
	if x := sent[len(sent)-1].GetExit(); x.GetCode() != 1 || x.GetError() != "late" {
		t.Errorf("exit message %v, want code 1 and the error", x)
	}
	if _, err := e.Write([]byte("x")); !errors.Is(err, errCallOver) {
		t.Errorf("Write after exit: %v", err)
	}
	if err := e.Emit(1); !errors.Is(err, errCallOver) {
		t.Errorf("Emit after exit: %v", err)
	}
}
