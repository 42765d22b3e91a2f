package ipc

import (
	"errors"
	"reflect"
	"testing"
)

type sample struct {
	kind Kind
	body any
	zero func() any // a pointer to a fresh value of the body's type
}

func sampleMessages() []sample {
	return []sample{
		{KindHello, &Hello{Proto: ProtocolName, Version: ProtocolVersion, Channel: ChannelAgent, Software: "t"}, func() any { return &Hello{} }},
		{KindListTools, &Empty{}, func() any { return &Empty{} }},
		{KindListTools, &ToolList{Tools: []ToolInfo{{Name: "echo", Kind: "process", Tier: "B", Args: true}}}, func() any { return &ToolList{} }},
		{KindCall, &CallRequest{RunID: "r1", Tool: "process.run", Args: []string{"/bin/echo", "hi"}, Workspace: "/tmp", TimeoutMS: 1000, MaxOutput: 10}, func() any { return &CallRequest{} }},
		{KindCall, &Outcome{CallID: "c", Tool: "echo", Tier: "B", Status: StatusOK, Stdout: []byte("hi\n"), Stderr: []byte{}, Sandbox: Receipt{Tier: "B", Backend: "native", Namespaces: []string{}, Layers: []string{"rlimits"}}}, func() any { return &Outcome{} }},
		{KindExec, &ExecSpec{CallID: "c", Path: "/bin/echo", Argv: []string{"echo"}, Env: []string{"A=b"}, Dir: "/tmp", Tier: "B", TimeoutMS: 1, MaxOutput: 1, Limits: Rlimits{CPUSeconds: 1}}, func() any { return &ExecSpec{} }},
		{KindStatus, &BrokerStatus{Mode: "single-user", Tiers: []string{"B"}}, func() any { return &BrokerStatus{} }},
		{KindStatus, &RoleStatus{Role: "verifier", PID: 3}, func() any { return &RoleStatus{} }},
		{KindError, &Error{Class: ClassDenied, Message: "no", Policies: []string{"p1"}}, func() any { return &Error{} }},
	}
}

func TestRoundTrip(t *testing.T) {
	for _, s := range sampleMessages() {
		t.Run(reflect.TypeOf(s.body).Elem().Name(), func(t *testing.T) {
			b, err := EncodeEnvelope(42, s.kind, s.body)
			if err != nil {
				t.Fatal(err)
			}
			m, err := DecodeEnvelope(b)
			if err != nil {
				t.Fatal(err)
			}
			if m.ID != 42 || m.Kind != s.kind {
				t.Fatalf("envelope %d %q", m.ID, m.Kind)
			}
			got := s.zero()
			if err := m.Decode(got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, s.body) {
				t.Fatalf("round trip: got %+v, want %+v", got, s.body)
			}
			// Deterministic: the same value encodes to the same bytes.
			b2, _ := EncodeEnvelope(42, s.kind, got)
			if string(b) != string(b2) {
				t.Fatal("re-encoding differs")
			}
		})
	}
}

func TestDecodeRefuses(t *testing.T) {
	type extra struct {
		Proto   string `msgpack:"proto"`
		Version int    `msgpack:"version"`
		Channel string `msgpack:"channel"`
		Admin   bool   `msgpack:"admin"`
	}
	withUnknown, _ := EncodeEnvelope(1, KindHello, extra{Proto: ProtocolName, Version: 1, Channel: "agent", Admin: true})
	badVersion, _ := Marshal(outEnvelope{V: 2, ID: 1, Kind: KindHello, Body: Hello{}})
	badKind, _ := Marshal(outEnvelope{V: 1, ID: 1, Kind: "exec_as_root", Body: Empty{}})
	wrongType, _ := EncodeEnvelope(1, KindCall, map[string]any{"tool": 7})
	envExtra, _ := Marshal(map[string]any{"v": 1, "id": 1, "kind": "hello", "body": Empty{}, "uid": 0})

	m, err := DecodeEnvelope(withUnknown)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Decode(&Hello{}); !errors.Is(err, ErrMalformed) {
		t.Errorf("unknown field: %v", err)
	}
	if _, err := DecodeEnvelope(badVersion); !errors.Is(err, ErrVersionMismatch) {
		t.Errorf("version 2: %v", err)
	}
	if _, err := DecodeEnvelope(badKind); !errors.Is(err, ErrMalformed) {
		t.Errorf("unknown kind: %v", err)
	}
	if _, err := DecodeEnvelope(envExtra); !errors.Is(err, ErrMalformed) {
		t.Errorf("unknown envelope field: %v", err)
	}
	m, err = DecodeEnvelope(wrongType)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Decode(&CallRequest{}); !errors.Is(err, ErrMalformed) {
		t.Errorf("wrong field type: %v", err)
	}
}

func TestErrorClasses(t *testing.T) {
	e := Errorf(ClassDenied, "uid %d", 5)
	if !errors.Is(e, ErrDenied) || errors.Is(e, ErrInternal) {
		t.Fatal("class matching")
	}
	if ClassOf(errors.New("x")) != ClassInternal {
		t.Fatal("unclassified error is not internal")
	}
	if ClassOf(e) != ClassDenied {
		t.Fatal("ClassOf")
	}
	if ErrorClass("root").Valid() {
		t.Fatal("made-up class valid")
	}
}
