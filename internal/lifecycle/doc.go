// Package lifecycle parses, validates and evaluates S3 bucket lifecycle
// configurations. It does no I/O: objstore asks it when an object expires
// and when an incomplete multipart upload is to be aborted; s3api asks it
// whether a document is valid and maps its errors to S3 error codes.
//
// # What is supported
//
//   - Expiration with Days (counted from the object's creation) or Date
//     (midnight UTC). ExpiredObjectDeleteMarker is accepted and has no
//     effect (b3 keeps no versions).
//   - AbortIncompleteMultipartUpload with DaysAfterInitiation.
//   - Filters: Prefix (in Filter or, legacy, in the Rule), Tag,
//     ObjectSizeGreaterThan, ObjectSizeLessThan, and And of those.
//   - NoncurrentVersionExpiration and NoncurrentVersionTransition are
//     accepted and have no effect; Transition is refused (NotImplemented):
//     b3 has one storage class. A Transition AWS would refuse (a Date not
//     at midnight UTC, negative Days) is refused first, with AWS's 400.
//   - A rule stored without an ID gets one (WithRuleIDs), as on AWS.
//
// # Time
//
// A "day" is Options.Day long (24h unless a debug day is set, as Ceph's
// rgw_lc_debug_interval does). With a real day, Days-based instants are
// rounded up to the next midnight UTC as AWS does; with a debug day they are
// exact: creation + Days×Day. When several enabled rules match an object,
// the earliest instant wins.
package lifecycle
