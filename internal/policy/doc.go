// Package policy decides who may do what to a bucket and its objects: it
// parses and evaluates bucket policies (the JSON access policy language of
// IAM, restricted to what S3 bucket policies use) and evaluates access
// control lists (grants). It does no I/O: the caller (package s3api, and
// the console through it) parses the stored documents, describes the
// request (Request) and reads the Decision.
//
// # Evaluation, as AWS does it for a bucket
//
//	explicit Deny in the policy     -> denied, whoever asks
//	the bucket's owner              -> allowed
//	an Allow in the policy          -> allowed
//	a grant in the ACL (ACLs.Allows) -> allowed
//	otherwise                       -> denied (implicitly)
//
// The caller applies that order; this package answers the two questions
// in it (Policy.Evaluate: Deny, Allow or NotApplicable; ACL grants) so the
// order stays in one place of the caller.
//
// # Guarantees
//
//   - Parse never panics and accepts only documents it can evaluate
//     exactly: an unknown element, operator, a condition key that no
//     request to b3 carries (KnownConditionKey), a bad IP, number or
//     date, a Resource outside the bucket is a
//     *MalformedError (S3's MalformedPolicy), never a silently ignored
//     statement. Fuzzed (FuzzParse).
//   - Evaluation is deterministic and allocation-light: no regular
//     expressions; wildcards ('*', '?') are matched by a linear-space
//     backtracking matcher.
//   - Condition semantics follow IAM: operators and keys are ANDed, the
//     values of one key ORed (NORed for negated operators); a key missing
//     from the request makes a condition false, except for negated
//     operators (true), ...IfExists (true) and Null (tests presence).
//
// # What it does not do
//
// b3 has one account: ARNs name users by the last path element of
// "arn:aws:iam::<any account>:user/<name>" (the user's name or access
// key), account ids and "root" ARNs match no one, and Service principals
// match no one. Policy variables are ${aws:username}, ${aws:userid},
// ${aws:SourceIp} and the escapes ${*}, ${?}, ${$}.
package policy
