package hostcall

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

const (
	secretAlpha = "sk-ALPHA-0123456789abcdef"
	secretBeta  = "sk-BETA-fedcba9876543210"
)

func testSecrets(t *testing.T) *Secrets {
	t.Helper()
	s, err := NewSecrets(map[string]map[string]string{
		"acme.alpha": {"api_token": secretAlpha},
		"acme.beta":  {"api_token": secretBeta, "db-pass": "hunter2-" + secretBeta},
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSecretsGet(t *testing.T) {
	t.Parallel()
	s := testSecrets(t)
	granted := Grant{Secrets: []string{"api_token"}}
	v, err := s.Get(granted, "acme.alpha", "api_token")
	if err != nil || string(v) != secretAlpha {
		t.Fatalf("Get = %q, %v", v, err)
	}
	v[0] = 'X' // the caller's copy
	if again, _ := s.Get(granted, "acme.alpha", "api_token"); string(again) != secretAlpha {
		t.Fatal("Get returned the stored bytes")
	}
	tests := []struct {
		name          string
		grant         Grant
		skill, secret string
		want          error
	}{
		{"not granted", Grant{}, "acme.alpha", "api_token", ErrDenied},
		{"another secret granted", Grant{Secrets: []string{"db-pass"}}, "acme.alpha", "api_token", ErrDenied},
		{"granted, not configured for this skill", Grant{Secrets: []string{"db-pass"}}, "acme.alpha", "db-pass", ErrNotFound},
		{"another skill's id", granted, "acme.gamma", "api_token", ErrNotFound},
	}
	for _, tt := range tests {
		v, err := s.Get(tt.grant, tt.skill, tt.secret)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: Get = %q, %v; want %v", tt.name, v, err, tt.want)
		}
		if err != nil && (strings.Contains(err.Error(), secretAlpha) || strings.Contains(err.Error(), secretBeta)) {
			t.Errorf("%s: the error shows a value: %v", tt.name, err)
		}
	}
	var zero Secrets
	if _, err := zero.Get(granted, "acme.alpha", "api_token"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("zero Secrets: %v", err)
	}
}

func TestNewSecretsCopies(t *testing.T) {
	t.Parallel()
	in := map[string]map[string]string{"acme.alpha": {"api_token": secretAlpha}}
	s, err := NewSecrets(in)
	if err != nil {
		t.Fatal(err)
	}
	in["acme.alpha"]["api_token"] = "changed"
	if v, _ := s.Get(Grant{Secrets: []string{"api_token"}}, "acme.alpha", "api_token"); string(v) != secretAlpha {
		t.Fatalf("the configuration map changed a value: %q", v)
	}
	for _, bad := range []map[string]map[string]string{
		{"": {"a": "v"}},
		{"acme.alpha": {"API_TOKEN": "v"}},
		{"acme.alpha": {"": "v"}},
	} {
		if _, err := NewSecrets(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("NewSecrets(%v): %v", bad, err)
		}
	}
}

// TestSecretsRedacted prints and logs Secrets (as a value, a pointer,
// inside structs with exported and unexported fields) and Grants, with
// every fmt verb and both slog handlers, and looks for the values.
func TestSecretsRedacted(t *testing.T) {
	t.Parallel()
	s := testSecrets(t)
	grant := Grant{
		HTTP:    []HostGrant{hg(t, "api.example.com", true, 8443)},
		Secrets: []string{"api_token", "db-pass"},
		KV:      true,
	}
	type exported struct{ S Secrets }
	type unexported struct{ s Secrets }
	type pointer struct{ S *Secrets }
	values := []any{s, *s, &s, exported{*s}, unexported{*s}, pointer{s}, []any{s}, map[string]any{"s": s}, grant}

	var out bytes.Buffer
	for _, v := range values {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T"} {
			fmt.Fprintf(&out, verb+"\n", v)
		}
		fmt.Fprintln(&out, v)
		if b, err := json.Marshal(v); err == nil {
			out.Write(b)
		}
	}
	for _, h := range []slog.Handler{slog.NewTextHandler(&out, nil), slog.NewJSONHandler(&out, nil)} {
		log := slog.New(h)
		log.Info("call", "secrets", s, "grant", grant)
		log.Info("call", slog.Any("secrets", *s), slog.Any("wrapped", exported{*s}), slog.Any("ptr", pointer{s}))
		log.With("secrets", s).Info("with")
		log.Info("group", slog.Group("g", "secrets", s))
	}
	v, _ := s.lookup("acme.alpha", "api_token")
	if leak := leaked(fmt.Sprintf("%v", struct{ v []byte }{v})); leak == "" {
		t.Fatal("the leak detector misses a value printed by reflection")
	}
	text := out.String()
	if leak := leaked(text); leak != "" {
		t.Fatalf("output shows %q:\n%s", leak, text)
	}
	// The output does say something: the grant's names and a summary.
	for _, want := range []string{"redacted", "api_token", "api.example.com:8443+private", "skills"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// leaked returns the form of a secret value that text shows: as text,
// hex, base64 or bytes in decimal (how fmt prints a []byte by
// reflection); "" if none.
func leaked(text string) string {
	lower := strings.ToLower(text)
	for _, v := range []string{secretAlpha, secretBeta} {
		for _, form := range []string{
			v, fmt.Sprintf("%x", v), base64.StdEncoding.EncodeToString([]byte(v)),
			strings.Trim(fmt.Sprint([]byte(v)[:8]), "[]"),
		} {
			if strings.Contains(lower, strings.ToLower(form)) {
				return form
			}
		}
	}
	return ""
}
