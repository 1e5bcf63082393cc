package supervisor

import (
	"regexp"
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/protocol"
)

func frame(framing, ready string, writes ...string) (events []launcher.Event, readied bool) {
	var re *regexp.Regexp
	if ready != "" {
		re = regexp.MustCompile(ready)
	}
	f := newFramer(framing, nil, re, func() { readied = true }, func(e launcher.Event) { events = append(events, e) })
	for _, w := range writes {
		f.Write([]byte(w))
	}
	f.finish()
	return events, readied
}

func TestFramerJSONL(t *testing.T) {
	evs, _ := frame(protocol.FramingJSONL, "", `{"a": 1}`+"\n\n  \n"+`{"b"`, `:2}`+"\nnope\n"+`[1]`)
	if len(evs) != 4 {
		t.Fatalf("events = %+v", evs)
	}
	if string(evs[0].Event) != `{"a": 1}` || string(evs[1].Event) != `{"b":2}` || string(evs[3].Event) != `[1]` {
		t.Errorf("valid events = %s %s %s (kept as written, the last one unterminated)", evs[0].Event, evs[1].Event, evs[3].Event)
	}
	if !evs[2].Invalid || evs[2].Raw != "nope" || evs[2].Error == "" {
		t.Errorf("invalid line = %+v", evs[2])
	}
}

func TestFramerReadyLineStartsEvents(t *testing.T) {
	evs, readied := frame(protocol.FramingLines, `^ready$`, "banner\nready\r\n", "one\ntwo")
	if !readied || len(evs) != 2 || string(evs[0].Event) != `"one"` || string(evs[1].Event) != `"two"` {
		t.Errorf("ready %v, events %+v", readied, evs)
	}
	evs, readied = frame(protocol.FramingChunks, `^ready$`, "x\nready\nfirst", "second")
	if !readied || len(evs) != 2 || string(evs[0].Event) != `"first"` || string(evs[1].Event) != `"second"` {
		t.Errorf("chunks: ready %v, events %+v", readied, evs)
	}
	if evs, readied := frame(protocol.FramingJSONL, `^ready$`, `{"a":1}`+"\n"); readied || len(evs) != 0 {
		t.Errorf("before ready: %v %+v", readied, evs)
	}
}

func TestFramerBoundsALongLine(t *testing.T) {
	long := strings.Repeat("é", MaxEventBytes) // twice the bound in bytes
	evs, _ := frame(protocol.FramingJSONL, "", long[:1000], long[1000:]+"\n", `{"after":1}`+"\n")
	if len(evs) != 2 || !evs[0].Invalid || len(evs[0].Raw) > MaxEventBytes || !strings.Contains(evs[0].Error, "longer than") {
		t.Fatalf("long line = %d events, first invalid %v len %d", len(evs), evs[0].Invalid, len(evs[0].Raw))
	}
	if !strings.HasPrefix(long, evs[0].Raw) {
		t.Error("the kept part is not the line's start on a character boundary")
	}
	if string(evs[1].Event) != `{"after":1}` {
		t.Errorf("the next line = %+v", evs[1])
	}
}
