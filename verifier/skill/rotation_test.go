package skill

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
)

func fpOf(k ed25519.PrivateKey) Fingerprint { return FingerprintOf(k.Public().(ed25519.PublicKey)) }

func TestRotationRoundTrip(t *testing.T) {
	for _, skills := range [][]ID{nil, {"acme.web"}, {"acme.web", "acme.db", "acme.web"}} {
		env, err := SignRotation(publisherKey, otherKey, skills)
		if err != nil {
			t.Fatal(err)
		}
		r, err := OpenRotation(env)
		if err != nil {
			t.Fatal(err)
		}
		if r.Old != fpOf(publisherKey) || r.New != fpOf(otherKey) || r.All != (len(skills) == 0) {
			t.Fatalf("%+v", r)
		}
		if len(skills) == 3 && (len(r.Skills) != 2 || r.Skills[0] != "acme.db") {
			t.Fatalf("skills not sorted and deduplicated: %v", r.Skills)
		}
	}
}

// rotationCases are rotation statements and what ParseRotation says.
var rotationCases = []struct {
	name, json string
	reason     Reason
}{
	{"good", `{"old":{"fingerprint":"OLD"},"new":{"fingerprint":"NEW"},"skills":{"all":false,"ids":["acme.web"]}}`, ""},
	{"all", `{"old":{"fingerprint":"OLD"},"new":{"fingerprint":"NEW"},"skills":{"all":true,"ids":[]}}`, ""},
	{"same key", `{"old":{"fingerprint":"OLD"},"new":{"fingerprint":"OLD"},"skills":{"all":true,"ids":[]}}`, ReasonRotationInvalid},
	{"nothing", `{"old":{"fingerprint":"OLD"},"new":{"fingerprint":"NEW"},"skills":{"all":false,"ids":[]}}`, ReasonRotationInvalid},
	{"all and ids", `{"old":{"fingerprint":"OLD"},"new":{"fingerprint":"NEW"},"skills":{"all":true,"ids":["acme.web"]}}`, ReasonRotationInvalid},
	{"unsorted", `{"old":{"fingerprint":"OLD"},"new":{"fingerprint":"NEW"},"skills":{"all":false,"ids":["b.b","a.a"]}}`, ReasonRotationInvalid},
	{"bad id", `{"old":{"fingerprint":"OLD"},"new":{"fingerprint":"NEW"},"skills":{"all":false,"ids":["Acme.Web"]}}`, ReasonRotationInvalid},
	{"bad fingerprint", `{"old":{"fingerprint":"ed25519:x"},"new":{"fingerprint":"NEW"},"skills":{"all":true,"ids":[]}}`, ReasonRotationInvalid},
	{"unknown member", `{"old":{"fingerprint":"OLD"},"new":{"fingerprint":"NEW"},"skills":{"all":true,"ids":[]},"x":1}`, ReasonRotationMalformed},
	{"repeated member", `{"old":{"fingerprint":"OLD"},"old":{"fingerprint":"NEW"},"new":{"fingerprint":"NEW"},"skills":{"all":true,"ids":[]}}`, ReasonRotationMalformed},
	{"case", `{"Old":{"fingerprint":"OLD"},"new":{"fingerprint":"NEW"},"skills":{"all":true,"ids":[]}}`, ReasonRotationMalformed},
	{"null ids", `{"old":{"fingerprint":"OLD"},"new":{"fingerprint":"NEW"},"skills":{"all":true,"ids":null}}`, ReasonRotationMalformed},
	{"not canonical", `{"old":{"fingerprint":"OLD"}, "new":{"fingerprint":"NEW"},"skills":{"all":true,"ids":[]}}`, ReasonRotationMalformed},
	{"skill statement", `{"skill":{"id":"acme.web","version":"1.0.0","sequence":1}}`, ReasonRotationMalformed},
}

func rotationJSONCase(s string) []byte {
	s = strings.ReplaceAll(s, "OLD", string(fpOf(publisherKey)))
	return []byte(strings.ReplaceAll(s, "NEW", string(fpOf(otherKey))))
}

func TestParseRotation(t *testing.T) {
	for _, c := range rotationCases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseRotation(rotationJSONCase(c.json))
			if got := ReasonOf(err); got != c.reason {
				t.Fatalf("reason %q, want %q (%v)", got, c.reason, err)
			}
		})
	}
}

// TestOpenRotationRefuses: a rotation must carry exactly the old and the
// new key's valid signatures over the rotation payload type.
func TestOpenRotationRefuses(t *testing.T) {
	third := testKey("third")
	good, err := SignRotation(publisherKey, otherKey, []ID{"acme.web"})
	if err != nil {
		t.Fatal(err)
	}
	env, _ := ParseEnvelope(good)
	payload := env.Payload
	sign := func(typ string, p []byte, keys ...ed25519.PrivateKey) []byte {
		e, _ := Sign(typ, p, keys[0])
		for _, k := range keys[1:] {
			o, _ := Sign(typ, p, k)
			e.Signatures = append(e.Signatures, o.Signatures...)
		}
		b, err := e.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	env2, _ := ParseEnvelope(good)
	env2.Payload = bytes.Replace(env2.Payload, []byte("acme.web"), []byte("acme.wex"), 1)
	tampered, _ := env2.Marshal()
	for _, c := range []struct {
		name   string
		env    []byte
		reason Reason
	}{
		{"old key only", sign(RotationPayloadType, payload, publisherKey), ReasonRotationSigners},
		{"new key only", sign(RotationPayloadType, payload, otherKey), ReasonRotationSigners},
		{"old and a third key", sign(RotationPayloadType, payload, publisherKey, third), ReasonRotationSigners},
		{"three keys", sign(RotationPayloadType, payload, publisherKey, otherKey, third), ReasonRotationSigners},
		{"skill payload type", sign(PayloadType, payload, publisherKey, otherKey), ReasonPayloadType},
		{"tampered payload", tampered, ReasonSignature},
		{"not an envelope", []byte("not json"), ReasonEnvelopeMalformed},
		{"too large", make([]byte, MaxRotationBytes+1), ReasonEnvelopeTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := OpenRotation(c.env)
			if !errors.Is(err, c.reason) {
				t.Fatalf("got %v, want %s", err, c.reason)
			}
		})
	}
	if _, err := SignRotation(publisherKey, publisherKey, nil); !errors.Is(err, ReasonRotationInvalid) {
		t.Fatalf("rotation to the same key: %v", err)
	}
}

func FuzzRotation(f *testing.F) {
	addSeeds(f, rotationSeeds())
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseRotation(data)
		if err != nil {
			if ReasonOf(err) == "" {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		b, err := r.Marshal()
		if err != nil || !bytes.Equal(b, data) {
			t.Fatalf("accepted a rotation that does not round-trip: %v", err)
		}
		if r.Old == r.New || r.All == (len(r.Skills) > 0) {
			t.Fatalf("accepted %+v", r)
		}
	})
}

func FuzzOpenRotation(f *testing.F) {
	addSeeds(f, openRotationSeeds(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := OpenRotation(data)
		if err != nil {
			if ReasonOf(err) == "" {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		env, err := ParseEnvelope(data)
		if err != nil {
			t.Fatalf("accepted an envelope ParseEnvelope refuses: %v", err)
		}
		signers, err := env.Verify(RotationPayloadType)
		if err != nil || len(signers) != 2 || r.Old == r.New {
			t.Fatalf("accepted %+v signed by %v: %v", r, signers, err)
		}
	})
}
