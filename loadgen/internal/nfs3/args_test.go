package nfs3

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"

	"workbench/loadgen/internal/content"
	"workbench/loadgen/internal/xdr"
)

// hx decodes hex words separated by spaces.
func hx(parts ...string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(strings.Join(parts, ""), " ", ""))
	if err != nil {
		panic(err)
	}
	return b
}

func encode(r *Request) []byte {
	var e xdr.Encoder
	r.Encode(&e)
	return e.Bytes()
}

// Hand-computed argument encodings (RFC 1813 §3.3).
func TestArgsGolden(t *testing.T) {
	fh4 := FH{1, 2, 3, 4}
	verf := [8]byte{1, 2, 3, 4, 5, 6, 7, 8}
	cases := []struct {
		name string
		req  Request
		want []byte
	}{
		{"null", Request{Proc: ProcNull}, nil},
		{"getattr", Request{Proc: ProcGetattr, FH: FH{1, 2, 3, 4, 5}},
			hx("00000005 01020304 05000000")},
		{"lookup", Request{Proc: ProcLookup, FH: FH{0xaa, 0xbb, 0xcc, 0xdd}, Name: "foo"},
			hx("00000004 aabbccdd", "00000003 666f6f00")},
		{"write", Request{Proc: ProcWrite, FH: fh4, Offset: 1<<32 + 5, Data: []byte("hello"), Stable: FileSync},
			hx("00000004 01020304", "00000001 00000005", "00000005", "00000002", "00000005 68656c6c 6f000000")},
		{"write-zeros", Request{Proc: ProcWrite, FH: fh4, Offset: 8, Count: 3, Stable: Unstable},
			hx("00000004 01020304", "00000000 00000008", "00000003", "00000000", "00000003 00000000")},
		{"readdir", Request{Proc: ProcReaddir, FH: FH{9, 9, 9, 9, 9, 9, 9, 9}, Cookie: 7, CookieVerf: verf, Count: 4096},
			hx("00000008 09090909 09090909", "00000000 00000007", "01020304 05060708", "00001000")},
		{"readdirplus", Request{Proc: ProcReaddirplus, FH: fh4, Cookie: 0, CookieVerf: verf, Count: 1024, MaxCount: 8192},
			hx("00000004 01020304", "00000000 00000000", "01020304 05060708", "00000400", "00002000")},
		{"create", Request{Proc: ProcCreate, FH: fh4, Name: "f", Mode: 0o644},
			hx("00000004 01020304", "00000001 66000000", "00000000",
				"00000001 000001a4", "00000000", "00000000", "00000000", "00000000", "00000000")},
		{"create-exclusive", Request{Proc: ProcCreate, FH: fh4, Name: "f", CreateHow: CreateExclusive, CookieVerf: verf},
			hx("00000004 01020304", "00000001 66000000", "00000002", "01020304 05060708")},
		{"setattr", Request{Proc: ProcSetattr, FH: fh4, SetSize: true, Size: 10},
			hx("00000004 01020304", "00000000", "00000000", "00000000", "00000001 00000000 0000000a",
				"00000000", "00000000", "00000000")},
		{"read", Request{Proc: ProcRead, FH: fh4, Offset: 4096, Count: 8192},
			hx("00000004 01020304", "00000000 00001000", "00002000")},
		{"rename", Request{Proc: ProcRename, FH: fh4, Name: "a", ToFH: FH{5, 6, 7, 8}, ToName: "bcde"},
			hx("00000004 01020304", "00000001 61000000", "00000004 05060708", "00000004 62636465")},
		{"symlink", Request{Proc: ProcSymlink, FH: fh4, Name: "l", Target: "t"},
			hx("00000004 01020304", "00000001 6c000000", "00000000 00000000 00000000 00000000 00000000 00000000",
				"00000001 74000000")},
		{"access", Request{Proc: ProcAccess, FH: fh4, Access: AccessRead | AccessLookup},
			hx("00000004 01020304", "00000003")},
		{"commit", Request{Proc: ProcCommit, FH: fh4, Offset: 0, Count: 0},
			hx("00000004 01020304", "00000000 00000000", "00000000")},
	}
	for _, c := range cases {
		got := encode(&c.req)
		if !bytes.Equal(got, c.want) {
			t.Errorf("%s:\n got % x\nwant % x", c.name, got, c.want)
		}
	}
}

// allRequests returns one populated request per procedure, with only the
// fields that procedure uses set (so decode(encode(r)) == r).
func allRequests() []Request {
	fh := FH{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}
	to := FH{7, 7, 7, 7}
	verf := [8]byte{8, 7, 6, 5, 4, 3, 2, 1}
	return []Request{
		{Proc: ProcNull},
		{Proc: ProcGetattr, FH: fh},
		{Proc: ProcSetattr, FH: fh, Mode: 0o600, SetSize: true, Size: 1 << 33},
		{Proc: ProcLookup, FH: fh, Name: "some-file.txt"},
		{Proc: ProcAccess, FH: fh, Access: 0x3f},
		{Proc: ProcReadlink, FH: fh},
		{Proc: ProcRead, FH: fh, Offset: 12345, Count: 65536},
		{Proc: ProcWrite, FH: fh, Offset: 99, Count: 7, Data: []byte("payload"), Stable: DataSync},
		{Proc: ProcCreate, FH: fh, Name: "new", Mode: 0o644, CreateHow: CreateGuarded},
		{Proc: ProcMkdir, FH: fh, Name: "dir", Mode: 0o755},
		{Proc: ProcSymlink, FH: fh, Name: "ln", Mode: 0o777, Target: "../target/path"},
		{Proc: ProcMknod, FH: fh, Name: "fifo", Mode: 0o600, NodeType: NF3FIFO},
		{Proc: ProcRemove, FH: fh, Name: "gone"},
		{Proc: ProcRmdir, FH: fh, Name: "gonedir"},
		{Proc: ProcRename, FH: fh, Name: "from", ToFH: to, ToName: "to-name"},
		{Proc: ProcLink, FH: fh, ToFH: to, ToName: "hard"},
		{Proc: ProcReaddir, FH: fh, Cookie: 42, CookieVerf: verf, Count: 8192},
		{Proc: ProcReaddirplus, FH: fh, Cookie: 43, CookieVerf: verf, Count: 4096, MaxCount: 32768},
		{Proc: ProcFsstat, FH: fh},
		{Proc: ProcFsinfo, FH: fh},
		{Proc: ProcPathconf, FH: fh},
		{Proc: ProcCommit, FH: fh, Offset: 1 << 40, Count: 1 << 20},
	}
}

func TestArgsRoundTrip(t *testing.T) {
	reqs := allRequests()
	if len(reqs) != NumProcs {
		t.Fatalf("%d requests for %d procedures", len(reqs), NumProcs)
	}
	extra := []Request{
		{Proc: ProcCreate, FH: FH{1}, Name: "x", CreateHow: CreateExclusive, CookieVerf: [8]byte{1, 1, 2, 2, 3, 3, 4, 4}},
		{Proc: ProcCreate, FH: FH{1}, Name: "y", CreateHow: CreateUnchecked},
		{Proc: ProcMknod, FH: FH{1}, Name: "chr", Mode: 0o600, NodeType: NF3CHR},
		{Proc: ProcMknod, FH: FH{1}, Name: "sock", NodeType: NF3SOCK},
		{Proc: ProcSetattr, FH: FH{1}},
	}
	for i, r := range append(reqs, extra...) {
		if i < NumProcs && r.Proc != Proc(i) {
			t.Fatalf("request %d is %s", i, r.Proc)
		}
		b := encode(&r)
		if len(b)%4 != 0 {
			t.Errorf("%s: length %d", r.Proc, len(b))
		}
		var got Request
		if err := DecodeRequest(r.Proc, b, &got); err != nil {
			t.Errorf("%s: %v", r.Proc, err)
			continue
		}
		if !reflect.DeepEqual(got, r) {
			t.Errorf("%s round trip:\n got %+v\nwant %+v", r.Proc, got, r)
		}
		// Every strict prefix is malformed; so are trailing bytes.
		for n := 0; n < len(b); n++ {
			if DecodeRequest(r.Proc, b[:n], &got) == nil {
				t.Errorf("%s: prefix of %d/%d bytes decoded", r.Proc, n, len(b))
				break
			}
		}
		if DecodeRequest(r.Proc, append(b, 0, 0, 0, 0), &got) == nil {
			t.Errorf("%s: trailing bytes accepted", r.Proc)
		}
	}
	// WRITE without Data sends Count zero bytes.
	var got Request
	w := Request{Proc: ProcWrite, FH: FH{1}, Count: 5}
	if err := DecodeRequest(ProcWrite, encode(&w), &got); err != nil || got.Count != 5 || !bytes.Equal(got.Data, make([]byte, 5)) {
		t.Errorf("write zeros: %v %+v", err, got)
	}
	// MKNOD with NodeType 0 is a FIFO.
	m := Request{Proc: ProcMknod, FH: FH{1}, Name: "p"}
	if err := DecodeRequest(ProcMknod, encode(&m), &got); err != nil || got.NodeType != NF3FIFO {
		t.Errorf("mknod default: %v %+v", err, got)
	}
	if DecodeRequest(Proc(22), nil, &got) == nil {
		t.Error("proc 22 accepted")
	}
	// A file handle longer than 64 bytes is rejected.
	long := Request{Proc: ProcGetattr, FH: make(FH, 65)}
	if DecodeRequest(ProcGetattr, encode(&long), &got) == nil {
		t.Error("65-byte handle accepted")
	}
}

func TestEncodeNoAlloc(t *testing.T) {
	e := xdr.NewEncoder(1 << 16)
	r := &Request{Proc: ProcWrite, FH: FH{1, 2, 3, 4}, Count: 4096}
	g := &Request{Proc: ProcGetattr, FH: FH{1, 2, 3, 4}}
	if n := testing.AllocsPerRun(100, func() { e.Reset(); r.Encode(e); g.Encode(e) }); n != 0 {
		t.Errorf("%v allocs", n)
	}
}

func TestProcNames(t *testing.T) {
	want := "null getattr setattr lookup access readlink read write create mkdir symlink mknod remove rmdir rename link readdir readdirplus fsstat fsinfo pathconf commit"
	var names []string
	for p := Proc(0); p < NumProcs; p++ {
		names = append(names, p.String())
		q, ok := ProcByName(p.String())
		if !ok || q != p {
			t.Errorf("ProcByName(%q) = %d %v", p.String(), q, ok)
		}
	}
	if got := strings.Join(names, " "); got != want {
		t.Errorf("names %q", got)
	}
	if _, ok := ProcByName("GETATTR"); ok {
		t.Error("upper case accepted")
	}
	if Proc(30).String() != "proc30" {
		t.Error(Proc(30).String())
	}
	if StatusString(NFS3ERR_NOENT) != "NFS3ERR_NOENT" || StatusString(0) != "NFS3_OK" || StatusString(12345) != "NFS3ERR_12345" {
		t.Error("StatusString")
	}
}

// A WRITE whose bytes Content makes encodes as the WRITE of those bytes.
func TestWriteContentEncodesAsItsBytes(t *testing.T) {
	src := content.NewSource(content.Spec{CompressRatio: 2, DedupePct: 20, UnitBytes: 512}, 1)
	data := make([]byte, 3001)
	src.Fill(data, 4, 777, 9)
	byData := Request{Proc: ProcWrite, FH: FH{1, 2, 3, 4}, Offset: 777, Data: data, Stable: Unstable}
	byContent := Request{Proc: ProcWrite, FH: FH{1, 2, 3, 4}, Offset: 777, Count: 3001, Stable: Unstable,
		Content: content.Ref{Src: src, File: 4, Gen: 9}}
	if !bytes.Equal(encode(&byContent), encode(&byData)) {
		t.Fatal("the Content WRITE differs from the WRITE of its bytes")
	}
}
