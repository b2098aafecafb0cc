package s3api

import (
	"encoding/xml"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
)

// Object Lock: the bucket's configuration (default retention), and each
// version's retention and legal hold. objstore enforces them (a locked
// version is never removed or replaced); this file parses, validates and
// renders them, and decides who may change them.

var (
	opGetObjectLockConfiguration = operation{name: "GetObjectLockConfiguration", perm: permOwner, handle: (*Server).getObjectLockConfiguration}
	opPutObjectLockConfiguration = operation{name: "PutObjectLockConfiguration", perm: permOwner, handle: (*Server).putObjectLockConfiguration}
	opGetObjectRetention         = operation{name: "GetObjectRetention", perm: permRead, handle: (*Server).getObjectRetention}
	opPutObjectRetention         = operation{name: "PutObjectRetention", perm: permOwner, handle: (*Server).putObjectRetention}
	opGetObjectLegalHold         = operation{name: "GetObjectLegalHold", perm: permRead, handle: (*Server).getObjectLegalHold}
	opPutObjectLegalHold         = operation{name: "PutObjectLegalHold", perm: permOwner, handle: (*Server).putObjectLegalHold}
)

var errNoLockConfig = errInvalidRequest.withMessage("Bucket is missing Object Lock Configuration")

// DefaultMaxRetention is Config.MaxRetention's default: 100 years with
// their leap days (36525 days), so that the longest default retention S3
// accepts (Years: 100, or Days: 36500) is still accepted.
const DefaultMaxRetention = 36525 * 24 * time.Hour

// What setting a lock asks of the caller beyond the write itself: the
// same as setting it afterwards with PutObjectRetention or
// PutObjectLegalHold (their operationAccess), so that a lock header is
// never a way around a policy that denies those operations. Setting a
// lock, like bypassing a GOVERNANCE retention, is the owner's or a
// policy's to allow, never an ACL's: no grant, not even the legacy bucket
// WRITE of buckets without an ownership setting, opens it (a lock outlives
// its writer's grant and can keep the owner from deleting for years).
var (
	accessSetRetention     = access{action: "s3:PutObjectRetention", perm: permOwner}
	accessSetLegalHold     = access{action: "s3:PutObjectLegalHold", perm: permOwner}
	accessBypassGovernance = access{action: "s3:BypassGovernanceRetention", perm: permOwner}
)

type objectLockConfiguration struct {
	XMLName           xml.Name `xml:"ObjectLockConfiguration"`
	Xmlns             string   `xml:"xmlns,attr,omitempty"`
	ObjectLockEnabled string   `xml:",omitempty"`
	Rule              *struct {
		DefaultRetention *defaultRetention
	} `xml:",omitempty"`
}

type defaultRetention struct {
	Mode  string
	Days  int `xml:",omitempty"`
	Years int `xml:",omitempty"`
}

// parseLockConfiguration validates an ObjectLockConfiguration document.
func parseLockConfiguration(data []byte) (*objectLockConfiguration, error) {
	var conf objectLockConfiguration
	if err := xml.Unmarshal(data, &conf); err != nil {
		return nil, errMalformedXML
	}
	if conf.ObjectLockEnabled != "Enabled" {
		return nil, errMalformedXML
	}
	if conf.Rule != nil {
		d := conf.Rule.DefaultRetention
		switch {
		case d == nil:
			return nil, errMalformedXML
		case d.Mode != meta.LockGovernance && d.Mode != meta.LockCompliance:
			return nil, errMalformedXML
		case d.Days != 0 && d.Years != 0:
			// Both: a document S3 refuses as MalformedXML (a bad
			// value of one is InvalidArgument, below).
			return nil, errMalformedXML
		case d.Days <= 0 && d.Years <= 0:
			return nil, errInvalidArgument.withMessage("Default retention period must be a positive integer value of Days or Years")
		case d.Days > 36500 || d.Years > 100:
			return nil, errInvalidArgument.withMessage("Default retention period too large")
		}
	}
	return &conf, nil
}

// defaultRetentionOf returns the mode and the retention end of a version
// written now in bucket bk under its default retention ("" if none). The
// end is at most now+max: a configuration stored before the operator
// lowered the maximum retention retains no longer than the new maximum.
func defaultRetentionOf(bk *meta.Bucket, now time.Time, max time.Duration) (string, time.Time) {
	if !bk.ObjectLock || bk.ObjectLockConfig == nil {
		return "", time.Time{}
	}
	conf, err := parseLockConfiguration(bk.ObjectLockConfig)
	if err != nil || conf.Rule == nil {
		return "", time.Time{}
	}
	d := conf.Rule.DefaultRetention
	end, limit := d.end(now.UTC()), now.UTC().Add(max)
	if end.After(limit) {
		end = limit
	}
	return d.Mode, end
}

// end is the retention end of a version written at now.
func (d *defaultRetention) end(now time.Time) time.Time { return now.AddDate(d.Years, 0, d.Days) }

// checkRetainUntil refuses a retention end beyond the server's maximum
// retention (Config.MaxRetention) from now, whoever asks: a COMPLIANCE
// retention cannot be shortened or removed by anyone, root included, so
// this bound is what keeps a mistaken or hostile date from pinning a
// version, and its bucket, for ever.
func (s *Server) checkRetainUntil(until, now time.Time) error {
	if until.After(now.Add(s.cfg.MaxRetention)) {
		return errInvalidArgument.withMessage("The retain until date must be at most %s in the future (this server's maximum retention)", formatRetention(s.cfg.MaxRetention))
	}
	return nil
}

// formatRetention renders a maximum retention in days when it is whole
// days (as --max-retention is usually given), else as a Go duration.
func formatRetention(d time.Duration) string {
	const day = 24 * time.Hour
	if d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + " days"
	}
	return d.String()
}

func (s *Server) getObjectLockConfiguration(rq *request) error {
	bk := rq.bucketRec
	if !bk.ObjectLock {
		return errNoSuchObjectLockConfig
	}
	conf := &objectLockConfiguration{ObjectLockEnabled: "Enabled"}
	if bk.ObjectLockConfig != nil {
		if parsed, err := parseLockConfiguration(bk.ObjectLockConfig); err == nil {
			conf = parsed
		}
	}
	conf.Xmlns = s3Namespace
	return writeXML(rq, conf)
}

// putObjectLockConfiguration sets the default retention. It also turns
// Object Lock on for a bucket whose versioning is Enabled (as S3 allows
// today); a bucket without versioning, or suspended, is refused.
func (s *Server) putObjectLockConfiguration(rq *request) error {
	data, err := readSmallBody(rq)
	if err != nil {
		return err
	}
	conf, err := parseLockConfiguration(data)
	if err != nil {
		return err
	}
	if conf.Rule != nil {
		now := s.cfg.Now().UTC()
		if s.checkRetainUntil(conf.Rule.DefaultRetention.end(now), now) != nil {
			return errInvalidArgument.withMessage("Default retention period too large: this server's maximum retention is %s", formatRetention(s.cfg.MaxRetention))
		}
	}
	err = s.store.UpdateBucket(rq.bucket, func(b *meta.Bucket) error {
		if !b.ObjectLock && b.Versioning != meta.VersioningEnabled {
			return errInvalidBucketState.withMessage("Versioning must be 'Enabled' on the bucket to apply a Object Lock configuration")
		}
		b.ObjectLock, b.ObjectLockConfig = true, data
		return nil
	})
	if err != nil {
		return err
	}
	return writeEmpty(rq, http.StatusOK)
}

// objectLock is the Object Lock of one write: a retention (Mode and
// Until, both set or both empty) and a legal hold.
type objectLock struct {
	Mode  string
	Until time.Time
	Hold  bool
	// holdAsked: the write names a legal hold (ON or OFF), which asks for
	// s3:PutObjectLegalHold as Mode asks for s3:PutObjectRetention.
	holdAsked bool
}

// lockOfWrite is the lock of a write whose lock headers (or POST form
// fields) are h: what they ask for, if the caller may set it (authorizeLock)
// and within the maximum retention, and the bucket's default retention if
// they ask for none. The default needs no permission beyond the write: the
// bucket's owner chose it.
func (s *Server) lockOfWrite(rq *request, h http.Header) (objectLock, error) {
	l, err := s.requestedLock(rq, h)
	if err != nil {
		return l, err
	}
	return l.orDefault(rq.bucketRec, s.cfg.Now(), s.cfg.MaxRetention), nil
}

// requestedLock reads the x-amz-object-lock-* headers h of a write: the
// lock they ask for, with an empty Mode when they ask for no retention.
// It checks the caller may set it and that it ends within the maximum
// retention.
func (s *Server) requestedLock(rq *request, h http.Header) (objectLock, error) {
	var l objectLock
	mode, until, hold := h.Get("x-amz-object-lock-mode"), h.Get("x-amz-object-lock-retain-until-date"), h.Get("x-amz-object-lock-legal-hold")
	if mode == "" && until == "" && hold == "" {
		return l, nil
	}
	if !rq.bucketRec.ObjectLock {
		return l, errNoLockConfig
	}
	switch hold {
	case "":
	case "OFF":
		l.holdAsked = true
	case "ON":
		l.Hold, l.holdAsked = true, true
	default:
		return l, errInvalidArgument.withMessage("Legal Hold must be either of 'ON' or 'OFF'")
	}
	if (mode == "") != (until == "") {
		return l, errInvalidArgument.withMessage("x-amz-object-lock-retain-until-date and x-amz-object-lock-mode must both be supplied")
	}
	if mode != "" {
		t, err := parseRetainUntil(mode, until)
		if err != nil {
			return l, err
		}
		if err := s.checkRetainUntil(t, s.cfg.Now()); err != nil {
			return l, err
		}
		l.Mode, l.Until = mode, t
	}
	return l, s.authorizeLock(rq, l)
}

// authorizeLock checks the caller may set the lock its write asks for:
// decide with s3:PutObjectRetention for a retention, s3:PutObjectLegalHold
// for a legal hold, on the object written (s3:PutObject alone, as an
// encoder's policy grants, sets neither).
func (s *Server) authorizeLock(rq *request, l objectLock) error {
	if l.Mode != "" {
		if err := s.decide(rq, rq.bucketRec, accessSetRetention, rq.key); err != nil {
			return err
		}
	}
	if l.holdAsked {
		return s.decide(rq, rq.bucketRec, accessSetLegalHold, rq.key)
	}
	return nil
}

// orDefault gives a lock without a retention of its own the bucket's
// default retention, counted from now and ending within max.
func (l objectLock) orDefault(bk *meta.Bucket, now time.Time, max time.Duration) objectLock {
	if l.Mode == "" {
		l.Mode, l.Until = defaultRetentionOf(bk, now, max)
	}
	return l
}

// applyTo sets obj's lock.
func (l objectLock) applyTo(obj *meta.Object) {
	obj.LockMode, obj.RetainUntil, obj.LegalHold = l.Mode, l.Until, l.Hold
	obj.LegalHoldSet = l.Hold || l.holdAsked
}

func parseRetainUntil(mode, until string) (time.Time, error) {
	if mode != meta.LockGovernance && mode != meta.LockCompliance {
		return time.Time{}, errInvalidArgument.withMessage("Unknown wormMode directive.")
	}
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(until))
	if err != nil {
		return time.Time{}, errInvalidArgument.withMessage("The retain until date must be provided in ISO 8601 format")
	}
	if !t.After(time.Now()) {
		return time.Time{}, errInvalidArgument.withMessage("The retain until date must be in the future!")
	}
	return t.UTC(), nil
}

// writeLockHeaders reports a version's lock on GET and HEAD.
func writeLockHeaders(h http.Header, obj *meta.Object) {
	if obj.LockMode != "" {
		h.Set("x-amz-object-lock-mode", obj.LockMode)
		h.Set("x-amz-object-lock-retain-until-date", obj.RetainUntil.UTC().Format(time.RFC3339))
	}
	switch {
	case obj.LegalHold:
		h.Set("x-amz-object-lock-legal-hold", "ON")
	case obj.LegalHoldSet:
		h.Set("x-amz-object-lock-legal-hold", "OFF")
	}
}

// bypassGovernance reports whether the request asks to bypass GOVERNANCE
// retention on key and may: decide allows s3:BypassGovernanceRetention
// (an administrator; else not if the bucket policy denies it, then the
// owner or a policy Allow). A caller asking without the right is not
// refused here: its request goes on without the bypass, so only a
// GOVERNANCE retention in force stops it (AccessDenied), as on S3.
func (s *Server) bypassGovernance(rq *request, key string) (bool, error) {
	if !strings.EqualFold(rq.Header.Get("x-amz-bypass-governance-retention"), "true") || rq.bucketRec == nil {
		return false, nil
	}
	err := s.decide(rq, rq.bucketRec, accessBypassGovernance, key)
	if ae, ok := errors.AsType[*APIError](err); ok && ae.Code == errAccessDenied.Code {
		return false, nil
	}
	return err == nil, err
}

type retention struct {
	XMLName         xml.Name `xml:"Retention"`
	Xmlns           string   `xml:"xmlns,attr,omitempty"`
	Mode            string   `xml:",omitempty"`
	RetainUntilDate string   `xml:",omitempty"`
}

func (s *Server) getObjectRetention(rq *request) error {
	if !rq.bucketRec.ObjectLock {
		return errNoLockConfig
	}
	obj, err := s.versionOrCurrent(rq)
	if err != nil {
		return err
	}
	if obj.LockMode == "" {
		return errNoSuchRetention
	}
	return writeXML(rq, retention{Xmlns: s3Namespace, Mode: obj.LockMode, RetainUntilDate: obj.RetainUntil.UTC().Format(time.RFC3339)})
}

// putObjectRetention sets, extends or (GOVERNANCE, with the bypass)
// shortens or removes a version's retention. A COMPLIANCE retention in
// force can only be extended.
func (s *Server) putObjectRetention(rq *request) error {
	var doc retention
	_, err := readXML(rq, &doc, false)
	if err == nil {
		rq.condHeader = http.Header{}
		if doc.Mode != "" {
			rq.condHeader.Set("x-amz-object-lock-mode", doc.Mode)
		}
		if doc.RetainUntilDate != "" {
			rq.condHeader.Set("x-amz-object-lock-retain-until-date", doc.RetainUntilDate)
		}
	}
	if err := s.decideLockBody(rq, err); err != nil {
		return err
	}
	var until time.Time
	if doc.Mode != "" || doc.RetainUntilDate != "" {
		if doc.Mode != "" && doc.Mode != meta.LockGovernance && doc.Mode != meta.LockCompliance {
			// An unknown mode in the document is MalformedXML, as S3
			// answers (in the x-amz-object-lock-mode header it is
			// InvalidArgument).
			return errMalformedXML
		}
		var err error
		if until, err = parseRetainUntil(doc.Mode, doc.RetainUntilDate); err != nil {
			if doc.Mode == "" || doc.RetainUntilDate == "" {
				return errMalformedXML
			}
			return err
		}
		if err := s.checkRetainUntil(until, s.cfg.Now()); err != nil {
			return err
		}
	}
	bypass, err := s.bypassGovernance(rq, rq.key)
	if err != nil {
		return err
	}
	err = s.updateVersion(rq, func(o *meta.Object) error {
		if o.LockMode != "" && time.Now().Before(o.RetainUntil) {
			weaker := doc.Mode != o.LockMode || until.Before(o.RetainUntil)
			switch {
			case o.LockMode == meta.LockCompliance && weaker:
				return errObjectLocked
			case o.LockMode == meta.LockGovernance && weaker && !bypass:
				return errObjectLocked
			}
		}
		o.LockMode, o.RetainUntil = doc.Mode, until
		return nil
	})
	if err != nil {
		return err
	}
	return writeEmpty(rq, http.StatusOK)
}

type legalHold struct {
	XMLName xml.Name `xml:"LegalHold"`
	Xmlns   string   `xml:"xmlns,attr,omitempty"`
	Status  string
}

func (s *Server) getObjectLegalHold(rq *request) error {
	if !rq.bucketRec.ObjectLock {
		return errNoLockConfig
	}
	obj, err := s.versionOrCurrent(rq)
	if err != nil {
		return err
	}
	status := "OFF"
	if obj.LegalHold {
		status = "ON"
	}
	return writeXML(rq, legalHold{Xmlns: s3Namespace, Status: status})
}

func (s *Server) putObjectLegalHold(rq *request) error {
	var doc legalHold
	_, err := readXML(rq, &doc, false)
	if err == nil {
		rq.condHeader = http.Header{}
		if doc.Status != "" {
			rq.condHeader.Set("x-amz-object-lock-legal-hold", doc.Status)
		}
	}
	if err := s.decideLockBody(rq, err); err != nil {
		return err
	}
	if doc.Status != "ON" && doc.Status != "OFF" {
		return errMalformedXML
	}
	err = s.updateVersion(rq, func(o *meta.Object) error {
		o.LegalHold, o.LegalHoldSet = doc.Status == "ON", true
		return nil
	})
	if err != nil {
		return err
	}
	return writeEmpty(rq, http.StatusOK)
}

// decideLockBody authorizes PutObjectRetention or PutObjectLegalHold once
// its body is read (readErr: how reading it failed), so that the
// s3:object-lock-* keys it carries (rq.condHeader) are in the decision (the
// operations are perKeyOperations: authorize leaves them to their
// handler). A caller who may not is refused before any answer about the
// body or the bucket's lock configuration.
func (s *Server) decideLockBody(rq *request, readErr error) error {
	if err := s.decide(rq, rq.bucketRec, requestAccess(rq), rq.key); err != nil {
		return err
	}
	if readErr != nil {
		return readErr
	}
	if !rq.bucketRec.ObjectLock {
		return errNoLockConfig
	}
	return nil
}

// versionOrCurrent returns the version the request names, or the current
// object. A delete marker answers 405 (with its headers).
func (s *Server) versionOrCurrent(rq *request) (*meta.Object, error) {
	id, err := versionParam(rq)
	if err != nil {
		return nil, err
	}
	if id == "" {
		obj, err := s.store.HeadObject(rq.bucket, rq.key)
		if err == nil {
			err = s.actOnJudged(rq, rq.bucketRec, requestAccess(rq), rq.key, obj)
		}
		if err != nil {
			return nil, err
		}
		return obj, nil
	}
	obj, err := s.store.HeadVersion(rq.bucket, rq.key, id)
	if err == nil && obj.DeleteMarker {
		return nil, s.deleteMarkerError(rq, id, objstore.ErrDeleteMarker)
	}
	return obj, err
}

// updateVersion changes the attributes of the version the request names,
// or of the current object; x-amz-version-id reports which.
func (s *Server) updateVersion(rq *request, fn func(*meta.Object) error) error {
	id, err := versionParam(rq)
	if err != nil {
		return err
	}
	var obj *meta.Object
	if id == "" {
		obj, err = s.store.UpdateObject(rq.bucket, rq.key, func(o *meta.Object) error {
			if err := s.actOnJudged(rq, rq.bucketRec, requestAccess(rq), rq.key, o); err != nil {
				return err
			}
			return fn(o)
		})
	} else {
		obj, err = s.store.UpdateVersion(rq.bucket, rq.key, id, fn)
	}
	if errors.Is(err, objstore.ErrDeleteMarker) {
		return s.deleteMarkerError(rq, id, err)
	}
	if err != nil {
		return err
	}
	s.writeVersionHeader(rq.w.Header(), rq.bucketRec, obj)
	return nil
}
