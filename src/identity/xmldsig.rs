//! Checking an enveloped XML signature (XML-DSig 1.1) on one element of a SAML document, with
//! the keys of certificates configured for the identity provider (the `KeyInfo` a document
//! carries is never trusted).
//!
//! Only the shape identity providers send is taken: one `Reference` to the signed element's
//! own `ID`, the enveloped-signature transform followed by exclusive canonicalization, SHA-2
//! digests, and RSA (PKCS #1 v1.5, keys of 2048 bits or more) signatures with SHA-2 or ECDSA
//! (P-256 with SHA-256, P-384 with SHA-384). SHA-1, inclusive canonicalization, XPath transforms and any other
//! reference are refused, which also closes the doors signature-wrapping attacks use: the
//! element checked is the element the caller then reads, and its `ID` must be unique in the
//! document. The arithmetic is ring's (already the TLS library's); certificates are read by
//! x509-parser (already in the build for LDAP's TLS).

use super::xml::Document;
use base64::Engine;
use sha2::Digest;

pub const DSIG: &str = "http://www.w3.org/2000/09/xmldsig#";
const EXC_C14N: &str = "http://www.w3.org/2001/10/xml-exc-c14n#";
const ENVELOPED: &str = "http://www.w3.org/2000/09/xmldsig#enveloped-signature";

/// A public key of the identity provider, from one of its certificates.
#[derive(Clone)]
pub struct VerifyingKey {
    kind: KeyKind,
    /// RSA: the PKCS #1 `RSAPublicKey`; EC: the uncompressed point.
    public: Vec<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyKind {
    Rsa,
    P256,
    P384,
}

impl std::fmt::Debug for VerifyingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "VerifyingKey({:?})", self.kind)
    }
}

impl VerifyingKey {
    /// The key of a certificate given as base64 (as metadata carries it) or PEM.
    pub fn from_certificate_text(text: &str) -> Result<VerifyingKey, String> {
        let body: String = text
            .lines()
            .filter(|l| !l.starts_with("-----"))
            .collect::<String>()
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        let der = base64::engine::general_purpose::STANDARD
            .decode(body)
            .map_err(|_| "a certificate that is not base64".to_owned())?;
        Self::from_certificate_der(&der)
    }

    /// The key of a DER certificate.
    pub fn from_certificate_der(der: &[u8]) -> Result<VerifyingKey, String> {
        use x509_parser::oid_registry::{
            OID_EC_P256, OID_KEY_TYPE_EC_PUBLIC_KEY, OID_NIST_EC_P384, OID_PKCS1_RSAENCRYPTION,
        };
        let (_, certificate) = x509_parser::parse_x509_certificate(der)
            .map_err(|e| format!("not an X.509 certificate ({e})"))?;
        let spki = certificate.public_key();
        let public = spki.subject_public_key.data.to_vec();
        let algorithm = &spki.algorithm.algorithm;
        let kind = if *algorithm == OID_PKCS1_RSAENCRYPTION {
            KeyKind::Rsa
        } else if *algorithm == OID_KEY_TYPE_EC_PUBLIC_KEY {
            let curve = spki
                .algorithm
                .parameters
                .as_ref()
                .and_then(|p| p.as_oid().ok());
            match curve {
                Some(c) if c == OID_EC_P256 => KeyKind::P256,
                Some(c) if c == OID_NIST_EC_P384 => KeyKind::P384,
                _ => return Err("an elliptic curve other than P-256 and P-384".into()),
            }
        } else {
            return Err(format!("a key of type {algorithm}, neither RSA nor EC"));
        };
        Ok(VerifyingKey { kind, public })
    }

    /// Whether `signature` over `message` is this key's, by `method`.
    fn verifies(&self, method: SignatureMethod, message: &[u8], signature: &[u8]) -> bool {
        use ring::signature as sig;
        let algorithm: &dyn sig::VerificationAlgorithm = match (self.kind, method) {
            (KeyKind::Rsa, SignatureMethod::RsaSha256) => &sig::RSA_PKCS1_2048_8192_SHA256,
            (KeyKind::Rsa, SignatureMethod::RsaSha384) => &sig::RSA_PKCS1_2048_8192_SHA384,
            (KeyKind::Rsa, SignatureMethod::RsaSha512) => &sig::RSA_PKCS1_2048_8192_SHA512,
            (KeyKind::P256, SignatureMethod::EcdsaSha256) => &sig::ECDSA_P256_SHA256_FIXED,
            (KeyKind::P384, SignatureMethod::EcdsaSha384) => &sig::ECDSA_P384_SHA384_FIXED,
            _ => return false,
        };
        sig::UnparsedPublicKey::new(algorithm, &self.public)
            .verify(message, signature)
            .is_ok()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SignatureMethod {
    RsaSha256,
    RsaSha384,
    RsaSha512,
    EcdsaSha256,
    EcdsaSha384,
}

impl SignatureMethod {
    fn of(uri: &str) -> Result<SignatureMethod, DsigError> {
        Ok(match uri {
            "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256" => SignatureMethod::RsaSha256,
            "http://www.w3.org/2001/04/xmldsig-more#rsa-sha384" => SignatureMethod::RsaSha384,
            "http://www.w3.org/2001/04/xmldsig-more#rsa-sha512" => SignatureMethod::RsaSha512,
            "http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha256" => SignatureMethod::EcdsaSha256,
            "http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha384" => SignatureMethod::EcdsaSha384,
            "http://www.w3.org/2000/09/xmldsig#rsa-sha1"
            | "http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha1" => {
                return Err(DsigError::Invalid(
                    "signed with SHA-1, which is refused: have the identity provider sign with \
                     SHA-256"
                        .into(),
                ))
            }
            other => {
                return Err(DsigError::Invalid(format!(
                    "the signature method {} is not supported",
                    shown(other)
                )))
            }
        })
    }
}

/// Why an element's signature was not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DsigError {
    /// The element carries no signature.
    Unsigned,
    /// It carries one that does not hold, or is of a shape not taken.
    Invalid(String),
}

impl std::fmt::Display for DsigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DsigError::Unsigned => write!(f, "not signed"),
            DsigError::Invalid(why) => write!(f, "bad signature: {why}"),
        }
    }
}

fn invalid<T>(why: impl Into<String>) -> Result<T, DsigError> {
    Err(DsigError::Invalid(why.into()))
}

/// Checks the signature that `signed` carries as a direct child over `signed` itself, with
/// one of `keys`.
pub fn verify_enveloped(
    doc: &Document,
    signed: usize,
    keys: &[VerifyingKey],
) -> Result<(), DsigError> {
    let bad = |e: super::xml::XmlError| DsigError::Invalid(e.0);
    let signature = doc
        .only_child(signed, DSIG, "Signature")
        .map_err(bad)?
        .ok_or(DsigError::Unsigned)?;
    let id = doc
        .attribute(signed, "ID")
        .filter(|id| !id.is_empty())
        .ok_or_else(|| DsigError::Invalid("the signed element has no ID".into()))?;
    let holders = ["ID", "Id", "id"]
        .iter()
        .map(|name| doc.with_attribute(name, id).count())
        .sum::<usize>();
    if holders != 1 {
        return invalid(format!(
            "the ID {} is not unique in the document",
            shown(id)
        ));
    }
    let signed_info = doc
        .only_child(signature, DSIG, "SignedInfo")
        .map_err(bad)?
        .ok_or_else(|| DsigError::Invalid("no SignedInfo".into()))?;
    let canonicalization = doc
        .only_child(signed_info, DSIG, "CanonicalizationMethod")
        .map_err(bad)?
        .ok_or_else(|| DsigError::Invalid("no CanonicalizationMethod".into()))?;
    let info_prefixes = exclusive_c14n_prefixes(doc, canonicalization)?;
    let method = doc
        .only_child(signed_info, DSIG, "SignatureMethod")
        .map_err(bad)?
        .and_then(|m| doc.attribute(m, "Algorithm"))
        .ok_or_else(|| DsigError::Invalid("no SignatureMethod".into()))?;
    let method = SignatureMethod::of(method)?;
    let mut references = doc.children_named(signed_info, DSIG, "Reference");
    let (Some(reference), None) = (references.next(), references.next()) else {
        return invalid("not exactly one Reference");
    };
    if doc.attribute(reference, "URI") != Some(&format!("#{id}")) {
        return invalid("the Reference is not to the signed element");
    }
    let signature_value = doc
        .only_child(signature, DSIG, "SignatureValue")
        .map_err(bad)?
        .and_then(|v| base64_of(&doc.text_of(v)))
        .ok_or_else(|| DsigError::Invalid("no SignatureValue in base64".into()))?;
    let info = doc.exclusive_c14n(signed_info, None, &info_prefixes);
    // The signature first: SignedInfo is small, and until it holds, nothing it names (the
    // transforms, the prefix list) is worth the work of canonicalizing the whole element.
    if !keys
        .iter()
        .any(|key| key.verifies(method, &info, &signature_value))
    {
        return invalid("the signature is not by any of the identity provider's certificates");
    }
    let transforms = doc
        .only_child(reference, DSIG, "Transforms")
        .map_err(bad)?
        .map(|t| doc.children_named(t, DSIG, "Transform").collect::<Vec<_>>())
        .unwrap_or_default();
    let [enveloped, exclusive] = transforms[..] else {
        return invalid("the transforms are not enveloped-signature then exclusive c14n");
    };
    if doc.attribute(enveloped, "Algorithm") != Some(ENVELOPED) {
        return invalid("the first transform is not enveloped-signature");
    }
    let reference_prefixes = exclusive_c14n_prefixes(doc, exclusive)?;
    let digest_method = doc
        .only_child(reference, DSIG, "DigestMethod")
        .map_err(bad)?
        .and_then(|m| doc.attribute(m, "Algorithm"))
        .ok_or_else(|| DsigError::Invalid("no DigestMethod".into()))?;
    let expected = doc
        .only_child(reference, DSIG, "DigestValue")
        .map_err(bad)?
        .and_then(|v| base64_of(&doc.text_of(v)))
        .ok_or_else(|| DsigError::Invalid("no DigestValue in base64".into()))?;
    let canonical = doc.exclusive_c14n(signed, Some(signature), &reference_prefixes);
    let digest = match digest_method {
        "http://www.w3.org/2001/04/xmlenc#sha256" => sha2::Sha256::digest(&canonical).to_vec(),
        "http://www.w3.org/2001/04/xmldsig-more#sha384" => {
            sha2::Sha384::digest(&canonical).to_vec()
        }
        "http://www.w3.org/2001/04/xmlenc#sha512" => sha2::Sha512::digest(&canonical).to_vec(),
        "http://www.w3.org/2000/09/xmldsig#sha1" => {
            return invalid(
                "a SHA-1 digest, which is refused: have the identity provider use SHA-256",
            )
        }
        other => {
            return invalid(format!(
                "the digest method {} is not supported",
                shown(other)
            ))
        }
    };
    if !crate::auth::constant_time_eq(&digest, &expected) {
        return invalid("the signed element was changed after signing (digest mismatch)");
    }
    Ok(())
}

/// The InclusiveNamespaces PrefixList of an exclusive canonicalization `method` element;
/// refused when it is another algorithm.
fn exclusive_c14n_prefixes(doc: &Document, method: usize) -> Result<Vec<String>, DsigError> {
    if doc.attribute(method, "Algorithm") != Some(EXC_C14N) {
        return invalid(format!(
            "canonicalization {} is not exclusive c14n without comments",
            shown(doc.attribute(method, "Algorithm").unwrap_or("(none)"))
        ));
    }
    Ok(doc
        .children_named(method, EXC_C14N, "InclusiveNamespaces")
        .filter_map(|i| doc.attribute(i, "PrefixList"))
        .flat_map(|list| list.split_ascii_whitespace().map(str::to_owned))
        .take(64)
        .collect())
}

/// A value of the document as a reason shows it: quoted and escaped (no line of its own in the
/// server's log), and short.
pub fn shown(value: &str) -> String {
    let short: String = value.chars().take(100).collect();
    format!("{short:?}")
}

/// Base64 with whitespace between (as XML signatures wrap it).
fn base64_of(text: &str) -> Option<Vec<u8>> {
    let compact: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    base64::engine::general_purpose::STANDARD
        .decode(compact)
        .ok()
}
