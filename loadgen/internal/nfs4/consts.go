// Package nfs4 encodes NFSv4.1 COMPOUND requests and decodes their replies
// (RFC 8881), and keeps an NFSv4.1 session (EXCHANGE_ID, CREATE_SESSION,
// RECLAIM_COMPLETE, a slot table, SEQUENCE, DESTROY_SESSION,
// DESTROY_CLIENTID) for fstress.
//
// It mirrors package nfs3: one Request struct carries the arguments of
// every COMPOUND kind fstress sends (an Op); Request.Encode appends the
// COMPOUND4args — SEQUENCE first, then the operations of the kind — and
// DecodeReply parses a COMPOUND4res of any of the operations fstress uses,
// checking every length against the remaining buffer and a cap, and every
// count against a limit, before allocating anything.
//
// COMPOUND kinds (Request.Op) and their operations after SEQUENCE:
//
//	OpGetattr    PUTFH FH; GETATTR Attrs (DefaultAttrs when empty)
//	OpSetattr    PUTFH FH; SETATTR Stateid, mode (Mode != 0), size (SetSize)
//	OpLookup     PUTFH FH; LOOKUP Name; GETFH; GETATTR
//	OpLookupPath PUTROOTFH; LOOKUP each of Path; GETFH; GETATTR
//	OpAccess     PUTFH FH; ACCESS Access
//	OpReadlink   PUTFH FH; READLINK
//	OpRead       PUTFH FH; READ Stateid, Offset, Count
//	OpWrite      PUTFH FH; WRITE Stateid, Offset, Stable, Count bytes of Content (or Data, or zeros)
//	OpCommit     PUTFH FH; COMMIT Offset, Count
//	OpOpen       PUTFH FH (directory); OPEN Name (created UNCHECKED4 with
//	             Mode when Create), share Access (read/write), no delegation
//	             wanted, owner {client id, Owner}; GETFH; GETATTR
//	OpClose      PUTFH FH; CLOSE Stateid
//	OpOpenClose  PUTFH FH (directory); OPEN as OpOpen; GETFH; CLOSE of the
//	             current stateid (the OPEN's): a create that keeps no state
//	OpMkdir      PUTFH FH; CREATE NF4DIR Name, Mode; GETFH
//	OpSymlink    PUTFH FH; CREATE NF4LNK Name -> Target, Mode; GETFH
//	OpRemove     PUTFH FH; REMOVE Name
//	OpRename     PUTFH FH; SAVEFH; PUTFH ToFH; RENAME Name -> ToName
//	OpLink       PUTFH FH (file); SAVEFH; PUTFH ToFH; LINK ToName
//	OpReaddir    PUTFH FH; READDIR Cookie, CookieVerf, DirCount, MaxCount, Attrs
//	OpSequence   (SEQUENCE alone: lease renewal)
//	OpReclaimComplete RECLAIM_COMPLETE (one_fs false)
//
// OpNull is the NULL procedure (no COMPOUND). The session operations
// EXCHANGE_ID, CREATE_SESSION, DESTROY_SESSION and DESTROY_CLIENTID are
// sent by Session (session.go, setup.go).
//
// The server half (server.go) decodes the arguments of a COMPOUND op by op
// and encodes results; package nullserver answers with it.
package nfs4

import "strconv"

// Program numbers.
const (
	Program      = 100003
	Version      = 4
	MinorVersion = 1
	ProcNull     = 0
	ProcCompound = 1
)

// Limits of the protocol (RFC 8881 §3.2) and of this decoder.
const (
	FHSize        = 128  // NFS4_FHSIZE
	OpaqueLimit   = 1024 // NFS4_OPAQUE_LIMIT
	SessionIDSize = 16
	VerifierSize  = 8
	OtherSize     = 12 // stateid4.other

	MaxNameLen   = 1024     // component4 accepted in replies
	MaxPathLen   = 4096     // READLINK target accepted in replies
	MaxTagLen    = 64       // COMPOUND tag accepted in replies
	MaxOps       = 64       // operations accepted in one COMPOUND reply
	MaxPath      = 32       // components of OpLookupPath
	MaxBitmapLen = 8        // bitmap4 words accepted
	MaxAttrLen   = 64 << 10 // attr_vals bytes accepted
	MaxEntries   = 2048     // READDIR entries accepted in one reply: fstress asks maxcount 32 KiB,
	//                         an entry is ≥ 24 bytes on the wire (≤ 1366 entries)
)

// Opnum is an nfs_opnum4.
type Opnum uint32

// Operation numbers (RFC 8881 §16.2 / §18).
const (
	OPACCESS           Opnum = 3
	OPCLOSE            Opnum = 4
	OPCOMMIT           Opnum = 5
	OPCREATE           Opnum = 6
	OPGETATTR          Opnum = 9
	OPGETFH            Opnum = 10
	OPLINK             Opnum = 11
	OPLOOKUP           Opnum = 15
	OPOPEN             Opnum = 18
	OPPUTFH            Opnum = 22
	OPPUTROOTFH        Opnum = 24
	OPREAD             Opnum = 25
	OPREADDIR          Opnum = 26
	OPREADLINK         Opnum = 27
	OPREMOVE           Opnum = 28
	OPRENAME           Opnum = 29
	OPSAVEFH           Opnum = 32
	OPSETATTR          Opnum = 34
	OPWRITE            Opnum = 38
	OPEXCHANGE_ID      Opnum = 42
	OPCREATE_SESSION   Opnum = 43
	OPDESTROY_SESSION  Opnum = 44
	OPSEQUENCE         Opnum = 53
	OPDESTROY_CLIENTID Opnum = 57
	OPRECLAIM_COMPLETE Opnum = 58
	OPILLEGAL          Opnum = 10044
)

var opnumNames = map[Opnum]string{
	OPACCESS: "ACCESS", OPCLOSE: "CLOSE", OPCOMMIT: "COMMIT", OPCREATE: "CREATE",
	OPGETATTR: "GETATTR", OPGETFH: "GETFH", OPLINK: "LINK", OPLOOKUP: "LOOKUP",
	OPOPEN: "OPEN", OPPUTFH: "PUTFH", OPPUTROOTFH: "PUTROOTFH", OPREAD: "READ",
	OPREADDIR: "READDIR", OPREADLINK: "READLINK", OPREMOVE: "REMOVE", OPRENAME: "RENAME",
	OPSAVEFH: "SAVEFH", OPSETATTR: "SETATTR", OPWRITE: "WRITE", OPEXCHANGE_ID: "EXCHANGE_ID",
	OPCREATE_SESSION: "CREATE_SESSION", OPDESTROY_SESSION: "DESTROY_SESSION",
	OPSEQUENCE: "SEQUENCE", OPDESTROY_CLIENTID: "DESTROY_CLIENTID",
	OPRECLAIM_COMPLETE: "RECLAIM_COMPLETE", OPILLEGAL: "ILLEGAL",
}

func (o Opnum) String() string {
	if n, ok := opnumNames[o]; ok {
		return n
	}
	return "OP" + strconv.FormatUint(uint64(o), 10)
}

// File types (nfs_ftype4).
const (
	NF4REG  = 1
	NF4DIR  = 2
	NF4BLK  = 3
	NF4CHR  = 4
	NF4LNK  = 5
	NF4SOCK = 6
	NF4FIFO = 7
)

// stable_how4.
const (
	Unstable = 0
	DataSync = 1
	FileSync = 2
)

// ACCESS bits (RFC 8881 §18.1).
const (
	AccessRead    = 0x01
	AccessLookup  = 0x02
	AccessModify  = 0x04
	AccessExtend  = 0x08
	AccessDelete  = 0x10
	AccessExecute = 0x20
)

// OPEN share_access and want flags, share_deny, opentype, createmode,
// open_claim_type, delegation types (RFC 8881 §18.16).
const (
	ShareAccessRead  = 1
	ShareAccessWrite = 2
	ShareAccessBoth  = 3
	ShareWantNoDeleg = 0x0400
	ShareDenyNone    = 0
	OpenNoCreate     = 0
	OpenCreate       = 1
	CreateUnchecked  = 0
	ClaimNull        = 0
	DelegNone        = 0
	DelegRead        = 1
	DelegWrite       = 2
	DelegNoneExt     = 3
)

// EXCHANGE_ID flags and state protection (RFC 8881 §18.35).
const (
	ExchgidUseNonPNFS = 0x00010000
	ExchgidConfirmedR = 0x80000000
	SP4None           = 0
	SP4MachCred       = 1
	SP4SSV            = 2
)
