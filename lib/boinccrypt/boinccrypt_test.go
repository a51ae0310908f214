package boinccrypt

import (
	"bytes"
	"crypto/md5"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	keyOnce sync.Once
	testKey *rsa.PrivateKey
)

func key(t testing.TB) *rsa.PrivateKey {
	keyOnce.Do(func() {
		var err error
		if testKey, err = GenerateKey(nil); err != nil {
			t.Fatal(err)
		}
	})
	return testKey
}

func TestKeyFormatRoundTrip(t *testing.T) {
	t.Parallel()
	k := key(t)
	pubText := FormatPublicKey(&k.PublicKey)
	lines := strings.Split(strings.TrimSuffix(pubText, "\n"), "\n")
	// "1024", 256 bytes in 8 lines of 32, ".".
	if lines[0] != "1024" || len(lines) != 10 || lines[9] != "." || len(lines[1]) != 64 {
		t.Fatalf("public key text has the wrong shape:\n%s", pubText)
	}
	pub, err := ParsePublicKey(pubText)
	if err != nil || !pub.Equal(&k.PublicKey) {
		t.Fatalf("ParsePublicKey: %v", err)
	}
	privText := FormatPrivateKey(k)
	priv, err := ParsePrivateKey(privText)
	if err != nil || !priv.Equal(k) {
		t.Fatalf("ParsePrivateKey: %v", err)
	}
	if n := len(parseHex(strings.SplitN(privText, "\n", 2)[1])); n != 706-2 {
		t.Fatalf("private key data: %d bytes, want 704 (R_RSA_PRIVATE_KEY less its bit count)", n)
	}
}

func TestSignature(t *testing.T) {
	t.Parallel()
	k := key(t)
	sum := md5.Sum([]byte("#!/bin/sh\necho hi\n"))
	m := hex.EncodeToString(sum[:])
	sig, err := SignMD5(k, m)
	if err != nil {
		t.Fatal(err)
	}
	if len(sig) != 256 {
		t.Fatalf("signature: %d hex digits, want 256", len(sig))
	}
	if !VerifyMD5(&k.PublicKey, m, sig) {
		t.Fatal("signature does not verify")
	}
	// A BOINC client reads the signature with line breaks too.
	if !VerifyMD5(&k.PublicKey, m, formatHex(parseHex(sig))) {
		t.Fatal("signature in BOINC's multi-line form does not verify")
	}
	if VerifyMD5(&k.PublicKey, strings.Repeat("0", 32), sig) {
		t.Fatal("signature verifies another file")
	}
}

// TestSignatureOpenSSL recovers the signed block with OpenSSL, as a BOINC client does
// (RSA public decrypt with PKCS #1 padding), when the openssl command is installed.
func TestSignatureOpenSSL(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("SKIP: no openssl command on PATH; TestSignature checks the same with Go's RSA")
	}
	k := key(t)
	dir := t.TempDir()
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pemFile, sigFile := filepath.Join(dir, "pub.pem"), filepath.Join(dir, "sig")
	os.WriteFile(pemFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600)
	m := "0123456789abcdef0123456789abcdef"
	sig, _ := SignMD5(k, m)
	os.WriteFile(sigFile, parseHex(sig), 0o600)
	out, err := exec.Command("openssl", "pkeyutl", "-verifyrecover", "-pubin", "-inkey", pemFile,
		"-pkeyopt", "rsa_padding_mode:pkcs1", "-in", sigFile).Output()
	if err != nil {
		t.Fatalf("openssl: %v", err)
	}
	if !bytes.Equal(out, []byte(m)) {
		t.Fatalf("openssl recovered %q, want %q", out, m)
	}
}

func FuzzParseKey(f *testing.F) {
	k := key(f)
	f.Add(FormatPublicKey(&k.PublicKey))
	f.Add(FormatPrivateKey(k))
	f.Add("1024\nzz\n.\n")
	f.Fuzz(func(t *testing.T, s string) {
		if pub, err := ParsePublicKey(s); err == nil {
			if _, err := ParsePublicKey(FormatPublicKey(pub)); err != nil {
				t.Fatalf("a parsed key does not parse again: %v", err)
			}
		}
		ParsePrivateKey(s)
	})
}
