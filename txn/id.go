package txn

import (
	"errors"
	"fmt"
)

// ID is a transaction id: the coordinator's id in the most significant
// bits, a sequence number of that coordinator in the least significant ones.
type ID struct {
	Most, Least uint64
}

// String formats the id as Pulsar's TxnID does, "(most,least)".
func (id ID) String() string { return fmt.Sprintf("(%d,%d)", id.Most, id.Least) }

// Status is a transaction's state at its coordinator.
type Status int

// The states of a transaction, as Pulsar's TxnStatus. A transaction starts
// Open; END_TXN (or its timeout) moves it to Committing or Aborting while
// its topics and subscriptions are told, then to Committed or Aborted.
const (
	Open Status = iota
	Committing
	Committed
	Aborting
	Aborted
)

// String returns the status as Pulsar names it ("OPEN", "COMMITTING"…).
func (s Status) String() string {
	switch s {
	case Open:
		return "OPEN"
	case Committing:
		return "COMMITTING"
	case Committed:
		return "COMMITTED"
	case Aborting:
		return "ABORTING"
	case Aborted:
		return "ABORTED"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// canMove reports whether a transaction may go from s to next, as Pulsar's
// TransactionUtil.canTransitionTo rules.
func (s Status) canMove(next Status) bool {
	switch s {
	case Open:
		return next != Committed && next != Aborted
	case Committing:
		return next == Committing || next == Committed
	case Aborting:
		return next == Aborting || next == Aborted
	case Committed, Aborted:
		return next == s
	}
	return false
}

// Kind is the kind of a transaction error; the broker answers each with the
// Pulsar error code of the same name.
type Kind int

// The kinds of Error.
const (
	// KindNotFound is TransactionNotFound: no open transaction has the id
	// (it never existed, or it ended), or the client does not own it.
	KindNotFound Kind = iota + 1
	// KindInvalidStatus is InvalidTxnStatus: the transaction is not in the
	// state the request needs.
	KindInvalidStatus
	// KindConflict is TransactionConflict: an acknowledgement that another
	// acknowledgement (in a transaction or not) already covers.
	KindConflict
	// KindNotAllowed is NotAllowedError: a message for a transaction the
	// topic knows has ended.
	KindNotAllowed
	// KindCoordinatorNotFound is TransactionCoordinatorNotFound: no
	// coordinator of that id is loaded.
	KindCoordinatorNotFound
)

// Error is a transaction error: its kind and Pulsar's message.
type Error struct {
	Kind Kind
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Is lets errors.Is match an *Error by kind: errors.Is(err, ErrConflict).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Msg == "" && t.Kind == e.Kind
}

// Sentinels to test an error's kind with errors.Is.
var (
	ErrNotFound            = &Error{Kind: KindNotFound}
	ErrInvalidStatus       = &Error{Kind: KindInvalidStatus}
	ErrConflict            = &Error{Kind: KindConflict}
	ErrNotAllowed          = &Error{Kind: KindNotAllowed}
	ErrCoordinatorNotFound = &Error{Kind: KindCoordinatorNotFound}
)

// ErrMaxActive is returned by Begin when the coordinator holds its most
// active transactions (maxActiveTransactionsPerCoordinator). Pulsar sends no
// reply at all then.
var ErrMaxActive = errors.New("txn: new transaction reaches the most active transactions")

func notFound(id ID) *Error {
	return &Error{KindNotFound, "The transaction with this txdID `" + id.String() + "`not found "}
}

func invalidStatus(id ID, want, got Status) *Error {
	return &Error{KindInvalidStatus, fmt.Sprintf("Expect Txn `%s` to be in %s status but it is in %s status", id, want, got)}
}
