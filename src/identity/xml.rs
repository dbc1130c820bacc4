//! A small, bounded XML tree for what SAML brings (responses and metadata), and its exclusive
//! canonical form (W3C Exclusive XML Canonicalization 1.0, without comments), the form XML
//! signatures are computed over.
//!
//! The tree keeps what canonicalization needs and a general parser's tree loses: each element's
//! and attribute's prefix as written, and the namespaces each element declares. It is read by
//! quick-xml's pull reader under bounds on size, depth, elements and attributes; a document
//! type declaration is refused (so no entity is ever expanded), as are processing instructions
//! and undeclared prefixes. Line ends and attribute values are normalized as XML 1.0 says a
//! parser must (§2.11, §3.3.3), since canonical form is defined over what a parser reports.

use quick_xml::events::Event;

/// The namespace of `xml:` attributes, bound without a declaration.
const XML_NAMESPACE: &str = "http://www.w3.org/XML/1998/namespace";

/// How much of a document is read.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub max_bytes: usize,
    pub max_depth: usize,
    pub max_elements: usize,
    pub max_attributes: usize,
}

impl Bounds {
    /// For a SAML response: a few kilobytes in practice.
    pub const RESPONSE: Bounds = Bounds {
        max_bytes: 256 * 1024,
        max_depth: 32,
        max_elements: 4096,
        max_attributes: 32,
    };
    /// For an identity provider's metadata (federation files list many entities).
    pub const METADATA: Bounds = Bounds {
        max_bytes: 4 * 1024 * 1024,
        max_depth: 32,
        max_elements: 200_000,
        max_attributes: 32,
    };
}

/// Why a document was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XmlError(pub String);

impl std::fmt::Display for XmlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "not acceptable XML: {}", self.0)
    }
}

fn refuse<T>(why: impl Into<String>) -> Result<T, XmlError> {
    Err(XmlError(why.into()))
}

/// One attribute: its prefix as written, its namespace, its local name and its value.
#[derive(Debug, Clone)]
pub struct Attribute {
    prefix: Option<String>,
    namespace: Option<String>,
    pub local: String,
    pub value: String,
}

/// A child of an element.
#[derive(Debug, Clone)]
pub enum Child {
    Element(usize),
    Text(String),
}

/// One element of the tree.
#[derive(Debug, Clone)]
pub struct Element {
    prefix: Option<String>,
    namespace: Option<String>,
    pub local: String,
    /// The namespaces this element declares: prefix (`None` for the default namespace) and
    /// URI (empty for `xmlns=""`).
    declared: Vec<(Option<String>, String)>,
    attributes: Vec<Attribute>,
    pub children: Vec<Child>,
    pub parent: Option<usize>,
}

/// A parsed document: its elements, the root first.
#[derive(Debug, Clone)]
pub struct Document {
    elements: Vec<Element>,
}

impl Document {
    /// Reads `bytes` within `bounds`.
    pub fn parse(bytes: &[u8], bounds: Bounds) -> Result<Document, XmlError> {
        if bytes.len() > bounds.max_bytes {
            return refuse(format!("longer than {} bytes", bounds.max_bytes));
        }
        let text = std::str::from_utf8(bytes).map_err(|_| XmlError("not UTF-8".into()))?;
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        // XML 1.0 §2.11: every CR LF and lone CR reads as LF.
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        let mut reader = quick_xml::Reader::from_str(&text);
        reader.config_mut().expand_empty_elements = true;
        reader.config_mut().check_end_names = true;
        let mut elements: Vec<Element> = Vec::new();
        let mut open: Vec<usize> = Vec::new();
        let mut finished = false;
        loop {
            let event = reader
                .read_event()
                .map_err(|e| XmlError(format!("at byte {}: {e}", reader.buffer_position())))?;
            match event {
                Event::Start(start) => {
                    if finished {
                        return refuse("more than one root element");
                    }
                    if open.len() >= bounds.max_depth {
                        return refuse(format!("nested deeper than {}", bounds.max_depth));
                    }
                    if elements.len() >= bounds.max_elements {
                        return refuse(format!("more than {} elements", bounds.max_elements));
                    }
                    let index = elements.len();
                    let element = Self::element(&elements, &open, &start, bounds)?;
                    elements.push(element);
                    if let Some(&parent) = open.last() {
                        elements[parent].children.push(Child::Element(index));
                    }
                    open.push(index);
                }
                Event::End(_) => {
                    open.pop();
                    if open.is_empty() {
                        finished = true;
                    }
                }
                Event::Text(t) => {
                    let raw = t.decode().map_err(|e| XmlError(e.to_string()))?;
                    Self::text(&mut elements, &open, &raw)?;
                }
                Event::GeneralRef(r) => {
                    let resolved = match r.resolve_char_ref() {
                        Ok(Some(c)) => c.to_string(),
                        Ok(None) => {
                            let name = r.decode().map_err(|e| XmlError(e.to_string()))?;
                            match quick_xml::escape::resolve_predefined_entity(&name) {
                                Some(s) => s.to_owned(),
                                None => return refuse(format!("unknown entity &{name};")),
                            }
                        }
                        Err(e) => return refuse(e.to_string()),
                    };
                    Self::text(&mut elements, &open, &resolved)?;
                }
                Event::CData(c) => {
                    let raw = c.decode().map_err(|e| XmlError(e.to_string()))?;
                    Self::text(&mut elements, &open, &raw)?;
                }
                // Canonical form without comments leaves them out.
                Event::Comment(_) => {}
                Event::Decl(_) if elements.is_empty() => {}
                Event::Decl(_) => return refuse("an XML declaration inside the document"),
                Event::DocType(_) => return refuse("a document type declaration"),
                Event::PI(_) => return refuse("a processing instruction"),
                Event::Empty(_) => return refuse("an unexpanded empty element"),
                Event::Eof => break,
            }
        }
        if elements.is_empty() || !open.is_empty() {
            return refuse("no complete root element");
        }
        Ok(Document { elements })
    }

    /// Text at the current place: whitespace only outside the root element.
    fn text(elements: &mut [Element], open: &[usize], text: &str) -> Result<(), XmlError> {
        match open.last() {
            Some(&at) => {
                let children = &mut elements[at].children;
                match children.last_mut() {
                    Some(Child::Text(before)) => before.push_str(text),
                    _ => children.push(Child::Text(text.to_owned())),
                }
                Ok(())
            }
            None if text.chars().all(|c| matches!(c, ' ' | '\t' | '\n')) => Ok(()),
            None => refuse("text outside the root element"),
        }
    }

    /// The element a start tag opens, its names resolved against the open elements.
    fn element(
        elements: &[Element],
        open: &[usize],
        start: &quick_xml::events::BytesStart<'_>,
        bounds: Bounds,
    ) -> Result<Element, XmlError> {
        let mut declared = Vec::new();
        let mut raw_attributes = Vec::new();
        for attribute in start.attributes().with_checks(true) {
            let attribute = attribute.map_err(|e| XmlError(e.to_string()))?;
            if raw_attributes.len() + declared.len() >= bounds.max_attributes {
                return refuse(format!(
                    "more than {} attributes on one element",
                    bounds.max_attributes
                ));
            }
            let name = utf8(attribute.key.as_ref())?;
            let raw = utf8(&attribute.value)?;
            // XML 1.0 §3.3.3: literal whitespace in a value reads as a space (references
            // to it do not).
            let normalized = raw.replace(['\t', '\n'], " ");
            let value = quick_xml::escape::unescape(&normalized)
                .map_err(|e| XmlError(format!("attribute {name}: {e}")))?
                .into_owned();
            if name == "xmlns" {
                declared.push((None, value));
            } else if let Some(prefix) = name.strip_prefix("xmlns:") {
                if value.is_empty() {
                    return refuse(format!("the prefix {prefix} undeclared (XML 1.0 names)"));
                }
                // `xml` may be declared, to its own namespace only (and is never rendered).
                if prefix == "xml" && value == XML_NAMESPACE {
                    continue;
                }
                if prefix == "xml" || prefix == "xmlns" || value == XML_NAMESPACE {
                    return refuse(format!("a declaration of the reserved prefix {prefix}"));
                }
                declared.push((Some(prefix.to_owned()), value));
            } else {
                raw_attributes.push((name.to_owned(), value));
            }
        }
        let lookup = |prefix: Option<&str>| -> Option<String> {
            if prefix == Some("xml") {
                return Some(XML_NAMESPACE.to_owned());
            }
            if let Some((_, uri)) = declared.iter().find(|(p, _)| p.as_deref() == prefix) {
                return Some(uri.clone());
            }
            open.iter()
                .rev()
                .find_map(|&at| {
                    elements[at]
                        .declared
                        .iter()
                        .find(|(p, _)| p.as_deref() == prefix)
                })
                .map(|(_, uri)| uri.clone())
        };
        let qname = start.name();
        let (prefix, local) = split_name(utf8(qname.as_ref())?)?;
        let namespace = match prefix {
            Some(p) => Some(
                lookup(Some(p)).ok_or_else(|| XmlError(format!("the prefix {p} is undeclared")))?,
            ),
            None => lookup(None).filter(|uri| !uri.is_empty()),
        };
        let mut attributes: Vec<Attribute> = Vec::with_capacity(raw_attributes.len());
        for (name, value) in raw_attributes {
            let (prefix, local) = split_name(&name)?;
            let namespace = match prefix {
                Some(p) => Some(
                    lookup(Some(p))
                        .ok_or_else(|| XmlError(format!("the prefix {p} is undeclared")))?,
                ),
                None => None,
            };
            if attributes
                .iter()
                .any(|a| a.local == local && a.namespace == namespace)
            {
                return refuse(format!("the attribute {name} twice"));
            }
            attributes.push(Attribute {
                prefix: prefix.map(str::to_owned),
                namespace,
                local: local.to_owned(),
                value,
            });
        }
        Ok(Element {
            prefix: prefix.map(str::to_owned),
            namespace,
            local: local.to_owned(),
            declared,
            attributes,
            children: Vec::new(),
            parent: open.last().copied(),
        })
    }

    /// The root element's index (always 0).
    pub fn root(&self) -> usize {
        0
    }

    pub fn element_at(&self, at: usize) -> &Element {
        &self.elements[at]
    }

    /// Whether the element at `at` is `local` in `namespace`.
    pub fn is(&self, at: usize, namespace: &str, local: &str) -> bool {
        let e = &self.elements[at];
        e.local == local && e.namespace.as_deref() == Some(namespace)
    }

    /// The value of the unqualified attribute `name` of the element at `at`.
    pub fn attribute(&self, at: usize, name: &str) -> Option<&str> {
        self.elements[at]
            .attributes
            .iter()
            .find(|a| a.namespace.is_none() && a.local == name)
            .map(|a| a.value.as_str())
    }

    /// The child elements of `at`.
    pub fn children(&self, at: usize) -> impl Iterator<Item = usize> + '_ {
        self.elements[at].children.iter().filter_map(|c| match c {
            Child::Element(i) => Some(*i),
            Child::Text(_) => None,
        })
    }

    /// The child elements of `at` that are `local` in `namespace`.
    pub fn children_named<'a>(
        &'a self,
        at: usize,
        namespace: &'a str,
        local: &'a str,
    ) -> impl Iterator<Item = usize> + 'a {
        self.children(at)
            .filter(move |&c| self.is(c, namespace, local))
    }

    /// The only child of `at` that is `local` in `namespace`: `None` when there is none,
    /// an error when there are several.
    pub fn only_child(
        &self,
        at: usize,
        namespace: &str,
        local: &str,
    ) -> Result<Option<usize>, XmlError> {
        let mut found = self.children_named(at, namespace, local);
        let first = found.next();
        if found.next().is_some() {
            return refuse(format!(
                "more than one {local} in {}",
                self.elements[at].local
            ));
        }
        Ok(first)
    }

    /// Every element that is `local` in `namespace`, anywhere in the document.
    pub fn all_named<'a>(
        &'a self,
        namespace: &'a str,
        local: &'a str,
    ) -> impl Iterator<Item = usize> + 'a {
        (0..self.elements.len()).filter(move |&i| self.is(i, namespace, local))
    }

    /// The elements whose attribute `name` (unqualified) has `value`.
    pub fn with_attribute<'a>(
        &'a self,
        name: &'a str,
        value: &'a str,
    ) -> impl Iterator<Item = usize> + 'a {
        (0..self.elements.len()).filter(move |&i| self.attribute(i, name) == Some(value))
    }

    /// The text of `at` and its descendants, in order.
    pub fn text_of(&self, at: usize) -> String {
        let mut out = String::new();
        self.collect_text(at, &mut out);
        out
    }

    fn collect_text(&self, at: usize, out: &mut String) {
        for child in &self.elements[at].children {
            match child {
                Child::Text(t) => out.push_str(t),
                Child::Element(e) => self.collect_text(*e, out),
            }
        }
    }

    /// The namespace URI `prefix` (`None`: the default namespace) has in scope at `at`.
    fn in_scope(&self, at: usize, prefix: Option<&str>) -> Option<&str> {
        let mut here = Some(at);
        while let Some(i) = here {
            let e = &self.elements[i];
            if let Some((_, uri)) = e.declared.iter().find(|(p, _)| p.as_deref() == prefix) {
                return Some(uri.as_str());
            }
            here = e.parent;
        }
        None
    }

    /// The exclusive canonical form (without comments) of the element at `at` and its
    /// descendants, leaving out the element `omit` (an enveloped signature) wherever it is, and
    /// treating the prefixes of `inclusive` (`#default` for the default namespace) as the
    /// InclusiveNamespaces PrefixList says.
    pub fn exclusive_c14n(&self, at: usize, omit: Option<usize>, inclusive: &[String]) -> Vec<u8> {
        let mut out = Vec::with_capacity(4096);
        let rendered: Vec<(Option<String>, String)> = Vec::new();
        self.c14n_element(at, omit, inclusive, &rendered, &mut out);
        out
    }

    fn c14n_element(
        &self,
        at: usize,
        omit: Option<usize>,
        inclusive: &[String],
        rendered: &[(Option<String>, String)],
        out: &mut Vec<u8>,
    ) {
        let e = &self.elements[at];
        // The prefixes this element visibly uses, and those the PrefixList names.
        let mut wanted: Vec<Option<&str>> = vec![e.prefix.as_deref()];
        for a in &e.attributes {
            if let Some(p) = a.prefix.as_deref() {
                wanted.push(Some(p));
            }
        }
        for p in inclusive {
            let p = if p == "#default" {
                None
            } else {
                Some(p.as_str())
            };
            if self.in_scope(at, p).is_some() {
                wanted.push(p);
            }
        }
        wanted.sort();
        wanted.dedup();
        let mut declarations: Vec<(Option<String>, String)> = Vec::new();
        for prefix in wanted {
            if prefix == Some("xml") {
                continue;
            }
            let uri = self.in_scope(at, prefix).unwrap_or("");
            let before = rendered
                .iter()
                .rev()
                .find(|(p, _)| p.as_deref() == prefix)
                .map(|(_, u)| u.as_str());
            let needed = match prefix {
                // The default namespace undeclared is written only to undo an ancestor's.
                None if uri.is_empty() => before.is_some_and(|b| !b.is_empty()),
                _ => before != Some(uri),
            };
            if needed {
                declarations.push((prefix.map(str::to_owned), uri.to_owned()));
            }
        }
        // Default namespace first, then by prefix (`None` sorts first).
        declarations.sort();
        let mut attributes: Vec<&Attribute> = e.attributes.iter().collect();
        attributes.sort_by(|a, b| {
            (a.namespace.as_deref().unwrap_or(""), a.local.as_str())
                .cmp(&(b.namespace.as_deref().unwrap_or(""), b.local.as_str()))
        });
        let name = qualified(e.prefix.as_deref(), &e.local);
        out.push(b'<');
        out.extend_from_slice(name.as_bytes());
        for (prefix, uri) in &declarations {
            match prefix {
                Some(p) => {
                    out.extend_from_slice(b" xmlns:");
                    out.extend_from_slice(p.as_bytes());
                }
                None => out.extend_from_slice(b" xmlns"),
            }
            out.extend_from_slice(b"=\"");
            escape_attribute(uri, out);
            out.push(b'"');
        }
        for a in attributes {
            out.push(b' ');
            out.extend_from_slice(qualified(a.prefix.as_deref(), &a.local).as_bytes());
            out.extend_from_slice(b"=\"");
            escape_attribute(&a.value, out);
            out.push(b'"');
        }
        out.push(b'>');
        let mut inner: Vec<(Option<String>, String)>;
        let scope = if declarations.is_empty() {
            rendered
        } else {
            inner = rendered.to_vec();
            inner.extend(declarations);
            &inner
        };
        for child in &e.children {
            match child {
                Child::Text(t) => escape_text(t, out),
                Child::Element(c) if Some(*c) == omit => {}
                Child::Element(c) => self.c14n_element(*c, omit, inclusive, scope, out),
            }
        }
        out.extend_from_slice(b"</");
        out.extend_from_slice(name.as_bytes());
        out.push(b'>');
    }
}

fn utf8(bytes: &[u8]) -> Result<&str, XmlError> {
    std::str::from_utf8(bytes).map_err(|_| XmlError("a name or value that is not UTF-8".into()))
}

/// `prefix:local` split, each part non-empty.
fn split_name(name: &str) -> Result<(Option<&str>, &str), XmlError> {
    match name.split_once(':') {
        Some((p, l)) if !p.is_empty() && !l.is_empty() && !l.contains(':') => Ok((Some(p), l)),
        Some(_) => refuse(format!("the name {name:?}")),
        None if !name.is_empty() => Ok((None, name)),
        None => refuse("an empty name"),
    }
}

fn qualified(prefix: Option<&str>, local: &str) -> String {
    match prefix {
        Some(p) => format!("{p}:{local}"),
        None => local.to_owned(),
    }
}

/// Text as canonical XML writes it.
fn escape_text(text: &str, out: &mut Vec<u8>) {
    for c in text.chars() {
        match c {
            '&' => out.extend_from_slice(b"&amp;"),
            '<' => out.extend_from_slice(b"&lt;"),
            '>' => out.extend_from_slice(b"&gt;"),
            '\r' => out.extend_from_slice(b"&#xD;"),
            c => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
}

/// An attribute value as canonical XML writes it.
fn escape_attribute(text: &str, out: &mut Vec<u8>) {
    for c in text.chars() {
        match c {
            '&' => out.extend_from_slice(b"&amp;"),
            '<' => out.extend_from_slice(b"&lt;"),
            '"' => out.extend_from_slice(b"&quot;"),
            '\t' => out.extend_from_slice(b"&#x9;"),
            '\n' => out.extend_from_slice(b"&#xA;"),
            '\r' => out.extend_from_slice(b"&#xD;"),
            c => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c14n(xml: &str, inclusive: &[&str]) -> String {
        let doc = Document::parse(xml.as_bytes(), Bounds::RESPONSE).unwrap();
        let inclusive: Vec<String> = inclusive.iter().map(|s| s.to_string()).collect();
        String::from_utf8(doc.exclusive_c14n(doc.root(), None, &inclusive)).unwrap()
    }

    #[test]
    fn canonical_form_sorts_escapes_and_keeps_only_the_namespaces_used() {
        // The W3C exclusive c14n examples' rules: unused declarations dropped, used ones moved
        // to where they are used, attributes sorted by namespace URI then name, empty
        // elements written out, text and attribute values escaped as c14n says.
        let xml = "<?xml version=\"1.0\"?>\r\n<n0:a xmlns:n0=\"urn:a\" xmlns:unused=\"urn:u\" \
                   xmlns:n1=\"urn:b\" z=\"1\" n1:y=\"2\" a=\"x&#9;y\r\nz\"><n1:b/><c>1 &lt; 2 &amp; \
                   &#xD;<![CDATA[<raw>]]></c><!-- gone --></n0:a>";
        assert_eq!(
            c14n(xml, &[]),
            "<n0:a xmlns:n0=\"urn:a\" xmlns:n1=\"urn:b\" a=\"x&#x9;y z\" z=\"1\" n1:y=\"2\">\
             <n1:b></n1:b><c>1 &lt; 2 &amp; &#xD;&lt;raw&gt;</c></n0:a>"
        );
    }

    #[test]
    fn a_subtree_declares_what_it_uses_and_the_prefix_list_adds_more() {
        let xml = "<r xmlns=\"urn:d\" xmlns:p=\"urn:p\" xmlns:q=\"urn:q\"><p:s><t q:v=\"1\"/>\
                   <u xmlns=\"\"/></p:s></r>";
        let doc = Document::parse(xml.as_bytes(), Bounds::RESPONSE).unwrap();
        let s = doc.children(doc.root()).next().unwrap();
        assert_eq!(
            String::from_utf8(doc.exclusive_c14n(s, None, &[])).unwrap(),
            "<p:s xmlns:p=\"urn:p\"><t xmlns=\"urn:d\" xmlns:q=\"urn:q\" q:v=\"1\"></t>\
             <u></u></p:s>"
        );
        assert_eq!(
            String::from_utf8(doc.exclusive_c14n(s, None, &["q".into(), "#default".into()]))
                .unwrap(),
            "<p:s xmlns=\"urn:d\" xmlns:p=\"urn:p\" xmlns:q=\"urn:q\"><t q:v=\"1\"></t>\
             <u xmlns=\"\"></u></p:s>"
        );
    }

    #[test]
    fn a_comment_does_not_cut_the_text_it_is_in() {
        // The SAML libraries that read only the text before a comment let
        // `alice@example.com<!---->.evil.org`, signed for that address, sign in as Alice.
        let doc = Document::parse(
            b"<r>alice@example.com<!-- -->.evil.org<![CDATA[!]]>&amp;</r>",
            Bounds::RESPONSE,
        )
        .unwrap();
        assert_eq!(doc.text_of(doc.root()), "alice@example.com.evil.org!&");
    }

    #[test]
    fn dangerous_or_broken_documents_are_refused() {
        for bad in [
            "<!DOCTYPE r [<!ENTITY e \"x\">]><r>&e;</r>",
            "<r>&unknown;</r>",
            "<?pi x?><r/>",
            "<r><p:x/></r>",
            "<r a=\"1\" a=\"2\"/>",
            "<r xmlns:p=\"urn:x\" xmlns:q=\"urn:x\" p:a=\"1\" q:a=\"2\"/>",
            "<r/><s/>",
            "<r>",
            "text<r/>",
            "",
        ] {
            assert!(
                Document::parse(bad.as_bytes(), Bounds::RESPONSE).is_err(),
                "{bad}"
            );
        }
        let deep = "<a>".repeat(40) + &"</a>".repeat(40);
        assert!(Document::parse(deep.as_bytes(), Bounds::RESPONSE).is_err());
        let wide = format!("<r>{}</r>", "<a/>".repeat(5000));
        assert!(Document::parse(wide.as_bytes(), Bounds::RESPONSE).is_err());
    }
}
