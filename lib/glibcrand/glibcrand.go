// Package glibcrand is the C library's rand() as glibc makes it (srand/rand, the
// TYPE_3 additive feedback generator behind random(3), RAND_MAX 2^31 − 1), written from
// its published algorithm, with BOINC's two transformations of it (lib/util.h drand,
// lib/util.cpp rand_normal).
//
// bsim draws from it under --emulate boinc, where BOINC's client emulator (client/sim.cpp)
// calls srand(1) and draws every random number from this one stream: with the same
// stream, the same draws at the same moments give the same trajectory.
//
// The algorithm: the seed s (0 taken as 1) fills r[0] = s and r[i] = 16807 × r[i−1] mod
// (2^31 − 1) for i = 1..30 (the multiplication in 32-bit signed steps, Schrage's way),
// r[i] = r[i−31] for i = 31..33; from then on r[i] = r[i−31] + r[i−3] (mod 2^32), the
// first 310 of these are thrown away, and each rand() is the next r[i] shifted right by
// one bit.
package glibcrand

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// RandMax is the largest value Int31 returns (glibc's RAND_MAX).
const RandMax = 1<<31 - 1

const (
	degree    = 31 // the feedback register's length (TYPE_3)
	separator = 3  // the second tap, degree − separator words behind the front
	discard   = 310
)

// Rand is one glibc rand() stream. The zero value is not seeded: use New or Seed.
type Rand struct {
	r           [degree]uint32
	front, rear int // the two taps' indices in r
	// BOINC's rand_normal makes two normal numbers from two draws and keeps the
	// second for its next call.
	cached  bool
	cachedN float64
}

// New is a stream seeded as srand(seed) seeds glibc's.
func New(seed uint32) *Rand {
	g := &Rand{}
	g.Seed(seed)
	return g
}

// Seed restarts the stream as srand(seed) does (and forgets a cached normal number, as
// a fresh process has none).
func (g *Rand) Seed(seed uint32) {
	if seed == 0 {
		seed = 1
	}
	word := int32(seed)
	g.r[0] = uint32(word)
	for i := 1; i < degree; i++ {
		// 16807 × word mod (2^31 − 1) without overflowing 32 bits.
		hi, lo := word/127773, word%127773
		word = 16807*lo - 2836*hi
		if word < 0 {
			word += RandMax
		}
		g.r[i] = uint32(word)
	}
	g.front, g.rear = separator, 0
	g.cached, g.cachedN = false, 0
	for range discard {
		g.next()
	}
}

// next is one step of the feedback register: the new word, before the shift.
func (g *Rand) next() uint32 {
	g.r[g.front] += g.r[g.rear]
	v := g.r[g.front]
	g.front++
	if g.front == degree {
		g.front = 0
	}
	g.rear++
	if g.rear == degree {
		g.rear = 0
	}
	return v
}

// Int31 is rand(): a number in [0, RandMax].
func (g *Rand) Int31() int32 { return int32(g.next() >> 1) }

// Float64 is BOINC's drand(): rand() / RAND_MAX, in [0, 1] (1 included). It has the
// name of math/rand's so that a function that takes either draws from either.
func (g *Rand) Float64() float64 { return float64(g.Int31()) / RandMax }

// Normal is BOINC's rand_normal(): Box–Muller on two drand() calls u1, u2 (in that
// order), z = sqrt(−2 ln u1), returning z cos(2π u2) and keeping z sin(2π u2) for the
// next call, which draws nothing. 2π is BOINC's 2 × 3.1415926, not math.Pi's.
func (g *Rand) Normal() float64 {
	if g.cached {
		g.cached = false
		return g.cachedN
	}
	const twoPi = 2 * 3.1415926
	u1 := g.Float64()
	u2 := g.Float64()
	z := math.Sqrt(-2 * math.Log(u1))
	g.cachedN, g.cached = z*math.Sin(twoPi*u2), true
	return z * math.Cos(twoPi*u2)
}

// Exponential is BOINC's emulator's exponential(mean) (client/sim_util.cpp):
// −mean × ln(1 − drand()), one draw.
func (g *Rand) Exponential(mean float64) float64 {
	return -mean * math.Log(1-g.Float64())
}

// stateLen is MarshalBinary's length: the register, the taps, the cached number.
const stateLen = 4*degree + 2 + 1 + 8

// MarshalBinary is the stream's position, for a saved run (UnmarshalBinary takes it up).
func (g *Rand) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, stateLen)
	for _, w := range g.r {
		b = binary.LittleEndian.AppendUint32(b, w)
	}
	b = append(b, byte(g.front), byte(g.rear))
	c := byte(0)
	if g.cached {
		c = 1
	}
	b = append(b, c)
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(g.cachedN)), nil
}

// UnmarshalBinary restores a position MarshalBinary wrote.
func (g *Rand) UnmarshalBinary(b []byte) error {
	if len(b) != stateLen {
		return errors.New(fmt.Sprintf("glibcrand: a saved stream is %d bytes, got %d", stateLen, len(b)))
	}
	var r [degree]uint32
	for i := range r {
		r[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	front, rear, c := int(b[4*degree]), int(b[4*degree+1]), b[4*degree+2]
	if front >= degree || rear >= degree || (front-rear+degree)%degree != separator || c > 1 {
		return errors.New("glibcrand: not a saved stream")
	}
	g.r, g.front, g.rear = r, front, rear
	g.cached, g.cachedN = c == 1, math.Float64frombits(binary.LittleEndian.Uint64(b[4*degree+3:]))
	return nil
}
