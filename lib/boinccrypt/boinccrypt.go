// Package boinccrypt owns BOINC's code-signing formats, so that a stock BOINC client
// accepts a bkit project's app files without any special setting: RSA key pairs in
// BOINC's text form (what crypt_prog writes and a client's <code_sign_key> holds), and
// file signatures (<file_signature>): the key's PKCS #1 v1.5 type-1 block over the
// file's MD5 as 32 lowercase hex characters, written in hex.
//
// BOINC's key structures hold at most 1024-bit moduli, so keys are 1024 bits. The
// formats are implemented from their description (lib/crypt.h and lib/crypt.cpp of
// BOINC: a decimal bit count on the first line, then the fixed-size big-endian fields
// in hex, 32 bytes a line, ending with a line holding "."); no BOINC code is used.
package boinccrypt

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"
)

// Bits is the modulus size of the keys BOINC clients read.
const Bits = 1024

// Field sizes of BOINC's R_RSA_PUBLIC_KEY and R_RSA_PRIVATE_KEY.
const (
	modulusLen = (Bits + 7) / 8
	primeLen   = ((Bits+1)/2 + 7) / 8
)

// GenerateKey makes a code-signing key pair of Bits bits.
func GenerateKey(r io.Reader) (*rsa.PrivateKey, error) {
	if r == nil {
		r = rand.Reader
	}
	return rsa.GenerateKey(r, Bits)
}

// field writes v big-endian, right-aligned in n bytes.
func field(v *big.Int, n int) []byte {
	b := make([]byte, n)
	return v.FillBytes(b)
}

// formatHex writes data as BOINC does: hex, 32 bytes a line, then a line ".".
func formatHex(data []byte) string {
	var b strings.Builder
	for i := 0; i < len(data); i += 32 {
		b.WriteString(hex.EncodeToString(data[i:min(i+32, len(data))]))
		b.WriteByte('\n')
	}
	b.WriteString(".\n")
	return b.String()
}

// parseHex reads hex digits, skipping line breaks, up to the first other character.
func parseHex(s string) []byte {
	var digits []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\n' || c == '\r' {
			continue
		}
		if !isHex(c) {
			break
		}
		digits = append(digits, c)
	}
	b, _ := hex.DecodeString(string(digits[:len(digits)/2*2]))
	return b
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// FormatPublicKey writes k's public half in BOINC's text form.
func FormatPublicKey(k *rsa.PublicKey) string {
	data := append(field(k.N, modulusLen), field(big.NewInt(int64(k.E)), modulusLen)...)
	return strconv.Itoa(k.N.BitLen()) + "\n" + formatHex(data)
}

// FormatPrivateKey writes k in BOINC's text form (R_RSA_PRIVATE_KEY's fields).
func FormatPrivateKey(k *rsa.PrivateKey) string {
	k.Precompute()
	var data []byte
	data = append(data, field(k.N, modulusLen)...)
	data = append(data, field(big.NewInt(int64(k.E)), modulusLen)...)
	data = append(data, field(k.D, modulusLen)...)
	for _, v := range []*big.Int{k.Primes[0], k.Primes[1], k.Precomputed.Dp, k.Precomputed.Dq, k.Precomputed.Qinv} {
		data = append(data, field(v, primeLen)...)
	}
	return strconv.Itoa(k.N.BitLen()) + "\n" + formatHex(data)
}

// splitKey reads the bit count line and the hex data of a key of want bytes.
func splitKey(text string, want int) (int, []byte, error) {
	text = strings.TrimLeft(text, " \t\r\n")
	line, rest, ok := strings.Cut(text, "\n")
	if !ok {
		return 0, nil, errors.New("key: want the bit count on the first line")
	}
	bits, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || bits <= 0 || bits > Bits {
		return 0, nil, fmt.Errorf("key: bit count: want 1 to %d, got %q", Bits, strings.TrimSpace(line))
	}
	data := parseHex(rest)
	if len(data) != want {
		return 0, nil, fmt.Errorf("key: want %d bytes of hex data, got %d", want, len(data))
	}
	return bits, data, nil
}

// ParsePublicKey reads a public key in BOINC's text form.
func ParsePublicKey(text string) (*rsa.PublicKey, error) {
	_, data, err := splitKey(text, 2*modulusLen)
	if err != nil {
		return nil, err
	}
	n := new(big.Int).SetBytes(data[:modulusLen])
	e := new(big.Int).SetBytes(data[modulusLen:])
	if n.Sign() == 0 || !e.IsInt64() || e.Int64() < 3 || e.Int64() > 1<<31-1 {
		return nil, errors.New("key: modulus or exponent out of range")
	}
	return &rsa.PublicKey{N: n, E: int(e.Int64())}, nil
}

// ParsePrivateKey reads a private key in BOINC's text form and checks it.
func ParsePrivateKey(text string) (*rsa.PrivateKey, error) {
	_, data, err := splitKey(text, 3*modulusLen+5*primeLen)
	if err != nil {
		return nil, err
	}
	num := func(off, n int) *big.Int { return new(big.Int).SetBytes(data[off : off+n]) }
	e := num(modulusLen, modulusLen)
	if !e.IsInt64() || e.Int64() < 3 || e.Int64() > 1<<31-1 {
		return nil, errors.New("key: public exponent out of range")
	}
	k := &rsa.PrivateKey{
		PublicKey: rsa.PublicKey{N: num(0, modulusLen), E: int(e.Int64())},
		D:         num(2*modulusLen, modulusLen),
		Primes:    []*big.Int{num(3*modulusLen, primeLen), num(3*modulusLen+primeLen, primeLen)},
	}
	if err := k.Validate(); err != nil {
		return nil, fmt.Errorf("key: %v", err)
	}
	k.Precompute()
	return k, nil
}

// SignMD5 signs a file whose MD5 is md5hex (32 lowercase hex characters) and returns
// the signature as hex on one line: BOINC clients skip line breaks in it, and one line
// survives any XML writer.
func SignMD5(k *rsa.PrivateKey, md5hex string) (string, error) {
	sig, err := rsa.SignPKCS1v15(nil, k, crypto.Hash(0), []byte(md5hex))
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(sig), nil
}

// VerifyMD5 reports whether sigHex is k's signature of md5hex: what a BOINC client
// checks before it runs an app file.
func VerifyMD5(k *rsa.PublicKey, md5hex, sigHex string) bool {
	sig := parseHex(sigHex)
	return len(sig) > 0 && rsa.VerifyPKCS1v15(k, crypto.Hash(0), []byte(md5hex), sig) == nil
}
