package nfs3

import (
	"reflect"
	"testing"

	"workbench/loadgen/internal/xdr"
)

// Hand-written reply bodies (RFC 1813 §3.3), independent of EncodeReply.
const (
	fattr = "00000001 000001a4 00000001 000003e8 00000064" + // type REG, mode 0644, nlink 1, uid 1000, gid 100
		"00000000 00001234 00000000 00002000" + // size, used
		"00000000 00000000" + // rdev
		"00000000 00000077 00000000 00000099" + // fsid, fileid
		"00000001 00000002 00000003 00000004 00000005 00000006" // atime, mtime, ctime
	post    = "00000001" + fattr
	noPost  = "00000000"
	pre     = "00000001 00000000 00001000 00000003 00000004 00000005 00000006"
	noPre   = "00000000"
	wcc     = pre + post
	noWcc   = noPre + noPost
	verfHex = "76657266 76657266" // "verfverf"
)

var goldenAttr = &Attr{Type: 1, Mode: 0o644, Nlink: 1, UID: 1000, GID: 100, Size: 0x1234, Used: 0x2000,
	Fsid: 0x77, FileID: 0x99, Atime: 1e9 + 2, Mtime: 3e9 + 4, Ctime: 5e9 + 6}

var verfBytes = [8]byte{'v', 'e', 'r', 'f', 'v', 'e', 'r', 'f'}

type replyCase struct {
	name string
	proc Proc
	body []byte
	want Reply
}

func replyCases() []replyCase {
	a := goldenAttr
	return []replyCase{
		{"null", ProcNull, nil, Reply{}},
		{"getattr ok", ProcGetattr, hx("00000000", fattr), Reply{Attr: a}},
		{"getattr stale", ProcGetattr, hx("00000046"), Reply{Status: NFS3ERR_STALE}},
		{"setattr ok", ProcSetattr, hx("00000000", wcc), Reply{Attr: a}},
		{"setattr perm", ProcSetattr, hx("00000001", noWcc), Reply{Status: NFS3ERR_PERM}},
		{"lookup ok", ProcLookup, hx("00000000", "00000004 deadbeef", post, noPost), Reply{FH: FH{0xde, 0xad, 0xbe, 0xef}, Attr: a}},
		{"lookup ok dir attrs", ProcLookup, hx("00000000", "00000001 01000000", noPost, post), Reply{FH: FH{1}}},
		{"lookup noent", ProcLookup, hx("00000002", post), Reply{Status: NFS3ERR_NOENT}},
		{"access ok", ProcAccess, hx("00000000", post, "0000001f"), Reply{Attr: a, Access: 0x1f}},
		{"access acces", ProcAccess, hx("0000000d", noPost), Reply{Status: NFS3ERR_ACCES}},
		{"readlink ok", ProcReadlink, hx("00000000", post, "00000003 74677400"), Reply{Attr: a, Target: "tgt"}},
		{"readlink inval", ProcReadlink, hx("00000016", post), Reply{Status: NFS3ERR_INVAL, Attr: a}},
		{"read ok", ProcRead, hx("00000000", post, "00000003", "00000001", "00000003 61626300"), Reply{Attr: a, Count: 3, EOF: true}},
		{"read ok empty", ProcRead, hx("00000000", noPost, "00000000", "00000000", "00000000"), Reply{}},
		{"read io", ProcRead, hx("00000005", noPost), Reply{Status: NFS3ERR_IO}},
		{"write ok", ProcWrite, hx("00000000", wcc, "00000005", "00000002", verfHex), Reply{Attr: a, Count: 5, Committed: FileSync, Verf: verfBytes}},
		{"write nospc", ProcWrite, hx("0000001c", noPre, post), Reply{Status: NFS3ERR_NOSPC, Attr: a}},
		{"create ok", ProcCreate, hx("00000000", "00000001 00000004 cafebabe", post, noWcc), Reply{FH: FH{0xca, 0xfe, 0xba, 0xbe}, Attr: a}},
		{"create exist", ProcCreate, hx("00000011", wcc), Reply{Status: NFS3ERR_EXIST, Attr: a}},
		{"mkdir ok no handle", ProcMkdir, hx("00000000", "00000000", noPost, wcc), Reply{}},
		{"mkdir nospc", ProcMkdir, hx("0000001c", noWcc), Reply{Status: NFS3ERR_NOSPC}},
		{"symlink ok", ProcSymlink, hx("00000000", "00000001 00000008 01020304 05060708", post, noPre, post), Reply{FH: FH{1, 2, 3, 4, 5, 6, 7, 8}, Attr: a}},
		{"symlink exist", ProcSymlink, hx("00000011", noWcc), Reply{Status: NFS3ERR_EXIST}},
		{"mknod ok", ProcMknod, hx("00000000", "00000001 00000002 abcd0000", noPost, noWcc), Reply{FH: FH{0xab, 0xcd}}},
		{"mknod notsupp", ProcMknod, hx("00002714", noWcc), Reply{Status: NFS3ERR_NOTSUPP}},
		{"remove ok", ProcRemove, hx("00000000", wcc), Reply{Attr: a}},
		{"remove noent", ProcRemove, hx("00000002", noWcc), Reply{Status: NFS3ERR_NOENT}},
		{"rmdir ok", ProcRmdir, hx("00000000", noPre, post), Reply{Attr: a}},
		{"rmdir notempty", ProcRmdir, hx("00000042", wcc), Reply{Status: NFS3ERR_NOTEMPTY, Attr: a}},
		{"rename ok", ProcRename, hx("00000000", wcc, wcc), Reply{Attr: a}},
		{"rename from-dir attrs only", ProcRename, hx("00000000", wcc, noWcc), Reply{}},
		{"rename xdev", ProcRename, hx("00000012", noWcc, noWcc), Reply{Status: NFS3ERR_XDEV}},
		{"link ok", ProcLink, hx("00000000", post, wcc), Reply{Attr: a}},
		{"link mlink", ProcLink, hx("0000001f", noPost, noWcc), Reply{Status: NFS3ERR_MLINK}},
		{"readdir ok", ProcReaddir, hx("00000000", post, verfHex,
			"00000001", "00000000 00000010", "00000001 61000000", "00000000 00000001",
			"00000001", "00000000 00000011", "00000002 62620000", "00000000 00000002",
			"00000000", "00000001"),
			Reply{Attr: a, CookieVerf: verfBytes, EOF: true, Entries: []Entry{
				{FileID: 0x10, Name: "a", Cookie: 1}, {FileID: 0x11, Name: "bb", Cookie: 2}}}},
		{"readdir ok empty", ProcReaddir, hx("00000000", noPost, verfHex, "00000000", "00000000"), Reply{CookieVerf: verfBytes}},
		{"readdir bad cookie", ProcReaddir, hx("00002713", post), Reply{Status: NFS3ERR_BAD_COOKIE, Attr: a}},
		{"readdirplus ok", ProcReaddirplus, hx("00000000", noPost, verfHex,
			"00000001", "00000000 00000099", "00000004 66696c65", "00000000 00000005", post, "00000001 00000003 01020300",
			"00000001", "00000000 00000100", "00000003 64697200", "00000000 00000006", noPost, "00000000",
			"00000000", "00000000"),
			Reply{CookieVerf: verfBytes, Entries: []Entry{
				{FileID: 0x99, Name: "file", Cookie: 5, FH: FH{1, 2, 3}, Type: NF3REG, Size: 0x1234},
				{FileID: 0x100, Name: "dir", Cookie: 6}}}},
		{"readdirplus toosmall", ProcReaddirplus, hx("00002715", noPost), Reply{Status: NFS3ERR_TOOSMALL}},
		{"fsstat ok", ProcFsstat, hx("00000000", post,
			"00000000 00000001 00000000 00000002 00000000 00000003 00000000 00000004 00000000 00000005 00000000 00000006",
			"00000007"),
			Reply{Attr: a, FSStat: FSStat{1, 2, 3, 4, 5, 6, 7}}},
		{"fsstat io", ProcFsstat, hx("00000005", noPost), Reply{Status: NFS3ERR_IO}},
		{"fsinfo ok", ProcFsinfo, hx("00000000", post,
			"00100000 00010000 00001000 00100000 00010000 00001000 00002000",
			"7fffffff ffffffff", "00000000 00000001", "0000001b"),
			Reply{Attr: a, FSInfo: FSInfo{RTMax: 1 << 20, RTPref: 1 << 16, RTMult: 4096, WTMax: 1 << 20, WTPref: 1 << 16,
				WTMult: 4096, DTPref: 8192, MaxFileSize: 1<<63 - 1, TimeDelta: 1, Properties: 0x1b}}},
		{"fsinfo stale", ProcFsinfo, hx("00000046", noPost), Reply{Status: NFS3ERR_STALE}},
		{"pathconf ok", ProcPathconf, hx("00000000", post, "00007d00 000000ff 00000001 00000001 00000000 00000001"),
			Reply{Attr: a, PathConf: PathConf{LinkMax: 32000, NameMax: 255, NoTrunc: true, ChownRestricted: true, CasePreserving: true}}},
		{"pathconf badhandle", ProcPathconf, hx("00002711", noPost), Reply{Status: NFS3ERR_BADHANDLE}},
		{"commit ok", ProcCommit, hx("00000000", wcc, verfHex), Reply{Attr: a, Verf: verfBytes}},
		{"commit io", ProcCommit, hx("00000005", noWcc), Reply{Status: NFS3ERR_IO}},
	}
}

func TestDecodeReplyGolden(t *testing.T) {
	seen := map[Proc][2]bool{}
	for _, c := range replyCases() {
		got, err := DecodeReply(c.proc, c.body)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %+v (attr %+v)\nwant %+v (attr %+v)", c.name, got, got.Attr, c.want, c.want.Attr)
		}
		s := seen[c.proc]
		s[boolIdx(c.want.Status != 0)] = true
		seen[c.proc] = s
		// Every strict prefix and any trailing data is malformed.
		for n := 0; n < len(c.body); n++ {
			if _, err := DecodeReply(c.proc, c.body[:n]); err == nil {
				t.Errorf("%s: prefix %d/%d decoded without error", c.name, n, len(c.body))
				break
			}
		}
		if _, err := DecodeReply(c.proc, append(append([]byte{}, c.body...), 0, 0, 0, 0)); err == nil {
			t.Errorf("%s: trailing bytes accepted", c.name)
		}
	}
	for p := Proc(1); p < NumProcs; p++ {
		if s := seen[p]; !s[0] || !s[1] {
			t.Errorf("%s: golden success %v failure %v", p, s[0], s[1])
		}
	}
}

func boolIdx(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestDecodeReplyMalformed(t *testing.T) {
	bad := []struct {
		proc Proc
		body []byte
	}{
		{ProcGetattr, hx("00000000 00000001")},                                    // short fattr
		{ProcLookup, hx("00000000 00000041", "00000000")},                         // 65-byte handle
		{ProcLookup, hx("00000000 00000001 01000000 00000002")},                   // bool 2
		{ProcRead, hx("00000000", noPost, "00000004 00000000 00000003 00000000")}, // count != data length
		{ProcReaddir, hx("00000000", noPost, verfHex, "00000001 00000000")},       // truncated entry
		{ProcNull, hx("00000000")},
		{Proc(99), hx("00000000")},
	}
	for i, b := range bad {
		if _, err := DecodeReply(b.proc, b.body); err == nil {
			t.Errorf("case %d (%s): no error", i, b.proc)
		}
	}
}

// EncodeReply and DecodeReply are inverses for every procedure.
func TestReplyRoundTrip(t *testing.T) {
	a := *goldenAttr
	for p := Proc(0); p < NumProcs; p++ {
		for _, status := range []uint32{NFS3_OK, NFS3ERR_IO} {
			r := Reply{Status: status, Attr: &a}
			if status == NFS3_OK {
				switch p {
				case ProcLookup, ProcCreate, ProcMkdir, ProcSymlink, ProcMknod:
					r.FH = FH{9, 8, 7}
				case ProcAccess:
					r.Access = 7
				case ProcReadlink:
					r.Target = "x/y"
				case ProcRead:
					r.Count, r.EOF = 5, true
				case ProcWrite:
					r.Count, r.Committed, r.Verf = 5, Unstable, verfBytes
				case ProcCommit:
					r.Verf = verfBytes
				case ProcReaddir:
					r.CookieVerf, r.EOF = verfBytes, true
					r.Entries = []Entry{{FileID: 1, Name: "one", Cookie: 1}, {FileID: 2, Name: "two", Cookie: 2}}
				case ProcReaddirplus:
					r.CookieVerf = verfBytes
					r.Entries = []Entry{{FileID: 1, Name: "one", Cookie: 1, FH: FH{1}, Type: NF3DIR, Size: 512}, {FileID: 2, Name: "two", Cookie: 2, Type: NF3REG}}
				case ProcFsstat:
					r.FSStat = FSStat{1, 2, 3, 4, 5, 6, 7}
				case ProcFsinfo:
					r.FSInfo = FSInfo{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
				case ProcPathconf:
					r.PathConf = PathConf{LinkMax: 1, NameMax: 2, ChownRestricted: true, CaseInsensitive: true}
				}
			}
			if p == ProcNull {
				r = Reply{}
			}
			var e xdr.Encoder
			EncodeReply(p, &r, &e)
			got, err := DecodeReply(p, e.Bytes())
			if err != nil {
				t.Errorf("%s/%d: %v", p, status, err)
				continue
			}
			want := r
			if status != NFS3_OK && (p == ProcGetattr || p == ProcLookup) {
				want.Attr = nil // no attributes kept on these failures
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s/%d:\n got %+v\nwant %+v", p, status, got, want)
			}
		}
	}
}

func TestDecodeReplyIntoReuse(t *testing.T) {
	var r Reply
	body := hx("00000000", fattr)
	if err := DecodeReplyInto(ProcGetattr, body, &r); err != nil || *r.Attr != *goldenAttr {
		t.Fatal(err)
	}
	n := testing.AllocsPerRun(100, func() {
		if err := DecodeReplyInto(ProcGetattr, body, &r); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Errorf("%v allocs per GETATTR decode", n)
	}
	if err := DecodeReplyInto(ProcGetattr, hx("00000046"), &r); err != nil || r.Attr != nil || r.Status != NFS3ERR_STALE {
		t.Fatalf("failure: %v %+v", err, r)
	}
	// The FH is a fresh copy every time.
	lk := hx("00000000", "00000004 deadbeef", noPost, noPost)
	if err := DecodeReplyInto(ProcLookup, lk, &r); err != nil {
		t.Fatal(err)
	}
	fh := r.FH
	lk[11] = 0
	if err := DecodeReplyInto(ProcLookup, lk, &r); err != nil || fh[3] != 0xef || r.FH[3] != 0 {
		t.Fatalf("FH aliasing: %v % x % x", err, fh, r.FH)
	}
}

// PATHCONF3resok (RFC 1813 §3.3.20), hand-built: every field lands in its
// own place (each boolean pattern sets a different one), and a boolean that
// is neither 0 nor 1 is malformed.
func TestDecodePathconf(t *testing.T) {
	cases := []struct {
		body string
		want PathConf
	}{
		{"00000400 000000ff 00000001 00000000 00000000 00000000", PathConf{LinkMax: 1024, NameMax: 255, NoTrunc: true}},
		{"00000001 00000002 00000000 00000001 00000000 00000000", PathConf{LinkMax: 1, NameMax: 2, ChownRestricted: true}},
		{"ffffffff 00000000 00000000 00000000 00000001 00000000", PathConf{LinkMax: 0xffffffff, CaseInsensitive: true}},
		{"00000000 00001000 00000000 00000000 00000000 00000001", PathConf{NameMax: 4096, CasePreserving: true}},
	}
	for _, c := range cases {
		for _, attrs := range []string{noPost, post} {
			rep, err := DecodeReply(ProcPathconf, hx("00000000", attrs, c.body))
			if err != nil {
				t.Errorf("%s: %v", c.body, err)
				continue
			}
			if rep.Status != NFS3_OK || rep.PathConf != c.want {
				t.Errorf("%s: got %+v status %d, want %+v", c.body, rep.PathConf, rep.Status, c.want)
			}
			if (attrs == post) != (rep.Attr != nil) {
				t.Errorf("%s: attributes %v", c.body, rep.Attr)
			}
		}
	}
	if _, err := DecodeReply(ProcPathconf, hx("00000000", noPost, "00000001 00000002 00000002 00000000 00000000 00000000")); err == nil {
		t.Error("no_trunc = 2 accepted")
	}
	if rep, err := DecodeReply(ProcPathconf, hx("00002714", noPost)); err != nil || rep.Status != NFS3ERR_NOTSUPP || rep.PathConf != (PathConf{}) {
		t.Errorf("failure arm: %v %+v", err, rep)
	}
}

func TestPropertyNames(t *testing.T) {
	cases := []struct {
		p    uint32
		want []string
	}{
		{0, []string{}},
		{0x1b, []string{"link", "symlink", "homogeneous", "cansettime"}},
		{FSF3_SYMLINK | FSF3_CANSETTIME, []string{"symlink", "cansettime"}},
		{0x04 | 0x20 | FSF3_LINK, []string{"link"}}, // undefined bits are not named
	}
	for _, c := range cases {
		if got := PropertyNames(c.p); !reflect.DeepEqual(got, c.want) {
			t.Errorf("PropertyNames(%#x) = %q, want %q", c.p, got, c.want)
		}
	}
}

// readdirBody: a READDIR reply (no attributes) of n entries with names of nameLen bytes.
func readdirBody(n, nameLen int) []byte {
	e := xdr.NewEncoder(0)
	e.Uint32(uint32(NFS3_OK))
	e.Bool(false)
	e.FixedOpaque(verfBytes[:])
	for i := 0; i < n; i++ {
		e.Bool(true)
		e.Uint64(uint64(i + 1))
		e.String(string(make([]byte, nameLen)))
		e.Uint64(uint64(i + 1))
	}
	e.Bool(false)
	e.Bool(true)
	return e.Bytes()
}

// A READDIR reply decodes to at most MaxEntries entries of names of at most
// MaxNameLen bytes: a server cannot make fstress hold several times the reply.
func TestDecodeReaddirBounded(t *testing.T) {
	if legal := 8192 / 24; MaxEntries > 4*legal { // fstress's largest count; an entry is ≥ 24 bytes
		t.Fatalf("MaxEntries %d: more than 4× the %d entries of an 8 KiB reply", MaxEntries, legal)
	}
	if r, err := DecodeReply(ProcReaddir, readdirBody(MaxEntries, MaxNameLen)); err != nil || len(r.Entries) != MaxEntries {
		t.Fatalf("%d entries of %d-byte names: %v", MaxEntries, MaxNameLen, err)
	}
	if _, err := DecodeReply(ProcReaddir, readdirBody(MaxEntries+1, 0)); err == nil {
		t.Errorf("%d entries: no error", MaxEntries+1)
	}
	if _, err := DecodeReply(ProcReaddir, readdirBody(1, MaxNameLen+1)); err == nil {
		t.Errorf("a %d-byte name: no error", MaxNameLen+1)
	}
}
