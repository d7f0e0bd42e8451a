// Package markup reads ad creatives the way the browser or the player that
// renders them does, and reports what they do: a navigation of the page
// without a user gesture, a javascript: or data: URL that runs without one,
// code or markup decoded at run time and run, a resource loaded over plain
// http, or markup that cannot be read to its end. It knows nothing of bids
// or gates: gates/markupsafety.go and gates/securemarkup.go route an adm here
// and turn the findings into verdicts.
//
// # Readers
//
//   - HTML: golang.org/x/net/html's WHATWG tree construction, with scripting
//     enabled as in a browser that runs ads: raw text, script data states,
//     foreign content (in <svg><style> an <img> breaks out and is live;
//     <svg><script> text has its character references decoded), noscript
//     content read as markup too (a browser without script builds it).
//     Markup without foreign content or noscript is read from the
//     tokenizer's start tags, found by a scan of their own (The tag scan,
//     below).
//   - Script: github.com/tdewolff/parse/v2/js, a full ECMAScript parser
//     whose scopes resolve every identifier to its declaration: a
//     parameter, a local or a class field named location is not the page's.
//   - CSS: github.com/tdewolff/parse/v2/css (CSS Syntax 3 tokens): url(),
//     @import and image-set() strings, escapes of at most six hex digits.
//   - VAST: encoding/xml is the reference. An element's text is its
//     character data, CDATA and references included, comments and
//     processing instructions inside it skipped; text split by a child
//     element is also read joined, as a player's XML DOM gives it
//     (textContent). A DOCTYPE internal subset or an entity declaration, or
//     a document not read to its end, is Unreadable. A well-formed document
//     (the strict rules of vastfacts.go, which ReadVAST reads under) is read
//     by a fast path instead (vastfast.go): the strict lexer's tokens
//     (vastlexer.go, shared with ReadVAST) give exactly the texts
//     encoding/xml gives, in the same order, without allocating.
//     Everything else (malformed or tolerated markup, a DOCTYPE, and the
//     few well-formed documents encoding/xml reads otherwise: a name with
//     two colons or a non-ASCII name, an XML declaration not of version
//     1.0) goes to encoding/xml unchanged. TestVASTFastAgainstXML (every
//     markup string of the tests and the golden files) and FuzzVASTFast
//     compare the two readings: findings, Insecure and every element text
//     read. Sniffing (looksLikeVAST) likewise answers from the lexer and
//     asks encoding/xml only when the opening is unusual (a reference or a
//     non-ASCII character before the first tag, CDATA, an end tag, a
//     quoted DOCTYPE, a VAST tag the lexer refuses).
//   - Native: jsonraw, bidguard's own JSON validator and tokenizer: when
//     the adm's first value is JSON it validates (bytes after it are
//     Unreadable unless an HTML reading reads them), it is walked in place
//     without allocating, strings decoded as encoding/json decodes them;
//     anything else is read token by token by encoding/json's Decoder, the
//     reference the walk is held equal to (TestNativeFastAgainstReference,
//     FuzzNativeFast), which reads what comes before a syntax error.
//     jstracker is HTML, a video asset's vasttag is VAST.
//
// # Judging
//
// A navigation is an assignment to the global location or to one of its
// loading properties (href, pathname, search, host, hostname, protocol,
// port) under window, top, parent, self, frames, globalThis, document or a
// binding aliasing one of them (`var w = top`), dotted or in brackets of a
// constant (`top["loc"+"ation"]`), compound, logical or destructuring; a
// top-level `var location`; location.assign/replace, also through
// .call/.apply/Reflect.apply; Reflect.set and Object.assign on the location
// (or the window's location property); window.open(u, "_top"|"_parent"|
// "_self"); <meta http-equiv=refresh>. Code runs without a gesture at a
// script's top level, in load/error/visibilitychange/... handlers (attributes,
// addEventListener, on<event> properties), in timers scheduled there, and in
// top-level functions referenced from there or never referenced (their
// callers cannot be followed); it runs on a gesture in click, mousedown,
// mouseup, pointerdown, pointerup, touchstart, touchend, keydown, keyup and
// submit handlers and in the href of <a> and <area> (a timer scheduled in a
// handler keeps its gesture). Only the first kind is a forced redirect. A
// javascript: URL in a frame, embed or object, a VAST resource or a native
// tracker runs without a gesture in a context of its own, as does a data:
// document in a frame: navigating or decoding-and-running there is
// JavascriptURL.
//
// Constants are evaluated: strings, numbers, + and templates, bindings
// assigned once, atob, unescape, decodeURI(Component),
// String.fromCharCode/fromCodePoint, [...].join. A constant handed to eval,
// Function (also as `(function(){}).constructor`), a timer, document.write
// (also through document.open() and with(document)), innerHTML, outerHTML,
// srcdoc or insertAdjacentHTML is read as the script or markup it becomes;
// a value that applies a decoder to something known only at run time is
// DecodeAndRun. Tagged templates of Function and the timers are sinks too.
//
// # Limits
//
// Nesting (srcdoc, eval, script-written markup, javascript: and data: URLs,
// HTMLResource, jstracker, vasttag) past Limits.MaxDepth, decoding past
// Limits.MaxDecodedBytes, the HTML parser's 512 open elements and the script
// parser's 1,000 nested statements or expressions are Unreadable: a reader
// never passes what lies beyond a limit. Reading is linear in the input
// (TestLinear bounds the allocations).
//
// # Choice of libraries (measured)
//
// On a 20 KB script-heavy HTML5 creative (BenchmarkHTMLTokenizers, shared
// 2-core host, load average about 8):
//
//	x/net/html Parse (tree)        477 µs   73 KB  1,304 allocs
//	x/net/html Tokenizer alone     171 µs   14 KB    791 allocs
//	tdewolff/parse/v2/html Lexer    95 µs  112 B       2 allocs
//
// The tdewolff lexer is the cheapest but builds no tree, so it cannot tell
// that <img> inside <svg><style> breaks out of foreign content; x/net/html
// implements the WHATWG tokenizer and tree construction (and caps the
// open-element stack), so it is the HTML reader: its tree for markup with
// foreign content or noscript, its tokenizer alone for the rest (the tree
// only moves or drops elements there; TestTokensAgainstTree and FuzzHTML
// check that the tokens hold every script the tree holds). For script,
// tdewolff/parse/v2/js is the only Go ECMAScript parser with scope
// resolution among the served modules; it ships go-fuzz targets for its
// lexers. Every reader here has a fuzz target (fuzz_test.go).
//
// Cost, in CPU time per reading of that creative (BenchmarkJudge's
// cpu-ns/op, GOMAXPROCS=1, fastest and median of twelve rounds, host load
// average 7-8, this build and the one before it run in turn): Judge
// 0.84-0.90 ms and 5,060 allocations (0.89-0.95 ms and 5,948 before),
// bounded by the script parser: parsing the creative's scripts and handlers
// alone takes 0.44-0.51 ms and 4,200 of those allocations, about one per
// syntax node, and x/net/html's tokenizer alone 0.08-0.09 ms
// (BenchmarkJudgeFloor); the rest is the two walks of each syntax tree
// (bindings, then the reading: about 0.22 ms, spread over the rules) and the
// tokens (figures from before the tag scan, whose own are under The tag
// scan). Insecure 0.14-0.16 ms and 456 allocations (0.17-0.18 ms and 947
// before), Read about what Judge costs; the hand-written lexers this package
// replaced took 0.16 ms and 0.04 ms without allocating, and rejected the
// creative (its javascript:void(0) link and click listener). Time and
// allocations grow linearly with size (BenchmarkJudge at 10 to 80 KB: 45-51
// µs per KB; TestLinear). A repeated creative is meant to cost a cache
// lookup, not a reading.
//
// What the HTML reading does to cost less, each checked against what it
// replaces: the token reading splits a start tag from the tokenizer's raw
// bytes with the tokenizer's own rules (splitTag; tag for tag against
// Tokenizer.Token on the golden creatives and in FuzzHTML), its attribute
// values viewing the tokenizer's buffer, where TagName and TagAttr copy
// every name, key and value (a tag with a NUL, CR or character reference, or
// more than 32 attributes, still goes through them); a script's text is
// copied once, for the parser; a handler or javascript: URL that does
// nothing (void(0), return false) is not parsed (TestInertBodies); CSS
// without '(' or '@' is not tokenized (it loads nothing; FuzzCSS).
//
// A creative that carries a per-bid id is never repeated, so small ones are
// read on every bid (BenchmarkReadDistinctBanner, ...VAST, ...Native; CPU
// time per creative, fastest and median of eight rounds at load average 7-8,
// the two builds run in turn): the load harness's 300-byte banner 4.4-5.4
// µs, 448 B and 24 allocations (5.2-5.7 µs, 1 KB and 54 before tags were
// split from raw bytes; 12-16 µs, 6.4 KB and 72 before the token reading
// pooled its tokenizer and left out the attributes it never reads). Its
// 450-byte inline VAST took 15-24 µs and 119 allocations inside
// encoding/xml (14.6% of the whole CPU of bidguard serve under load), and
// 24-46 µs and 183 sniffed; the VAST fast path reads it in 1.8-3.8 µs with
// 1 allocation (the analysis), and 8-16 µs and 56 sniffed (what is left is
// the HTML reading), the two builds run in turn at load average 5-10. Its
// native adm cost 16-18 µs and 169 allocations inside encoding/json's
// Decoder.Token (an interface value per token, a string per key and value:
// 9.7% of bidguard's CPU under load), hence the walk over jsonraw: 1.2-1.4
// µs and one allocation, the analysis's (BenchmarkNativeReadings, the walk
// alone: none, TestNativeFastAllocs; encoding/json 169). Since the
// top-level analysis and the tokenizer are pooled too, a well-formed VAST or
// native creative, or a banner without script, read under its media type
// allocates nothing (TestReadAllocs).
//
// # The tag scan
//
// The token reading needs from x/net/html's tokenizer only each start tag's
// raw bytes (splitTag splits them) and the text of script and style, and
// Tokenizer.Next read the banner above byte by byte through an io.Reader,
// copying every attribute key twice to find repeated ones: the HTML reading
// was 14.5% of bidguard serve's CPU under the load harness (about 8 µs a
// banner), Tokenizer.Next two thirds of it. So scanTags (htmlfast.go) finds
// those tags and texts itself, going from '<' to '<' and '>' with
// bytes.IndexByte, by the tokenizer's rules: a tag ends at a '>' outside a
// value quoted after '=', end tags are read as tags (quoted values and
// all), comments end as readComment ends them (<!-->, <!--->, --!>), bogus
// comments and doctypes at the first '>', the raw text and RCDATA elements
// (script, style, iframe, noembed, noframes, noscript, textarea, title,
// xmp) at their end tag matched without case, plaintext at the end, a '<'
// before anything but a letter, '/', '!' or '?' is text, a tag cut by the
// end of the markup is no token; script and style text has CR LF, CR and
// NUL converted as Tokenizer.Text converts them. A tag splitTag does not
// split (a character reference, NUL or CR in it, more than 32 attributes)
// is read by the tokenizer restarted on that tag alone (a start tag's token
// depends on its bytes only). x/net/html stays the reference, and the
// fallback: markup with a script whose text holds "<!--" before its end
// tag (the script data escaped states, not reproduced) is read by the
// tokenizer whole. TestHTMLFastAgainstTokenizer (every markup string of the
// tests, the golden files and the fuzz corpora, also with CR LF line ends,
// a CR after each '>', in upper case and cut short at each '<' and '>':
// 27,000 documents, 170 declined) compares the tags, the texts and the
// findings in each mode; FuzzHTMLFast the same (a million inputs, no
// divergence). Measured (GOMAXPROCS=1, fastest and median of five
// rounds, the two builds run in turn, load average 2.5-3.5): the banner
// 1.31-1.41 µs and no allocation (4.2-5.5 µs and 23 before); with a
// character reference in its click URL (BenchmarkReadDistinctBanner/Amp)
// 2.39-2.44 µs and 7 allocations (5.0-5.9 µs and 27); the VAST ad sniffed,
// so read as HTML too, 4.2-5.2 µs and 3 allocations, the HTML probe's
// analysis and function tables (8.3-9.5 µs and 30); the 20 KB creative's
// Judge 0.73-0.81 ms and 4,716 allocations (0.87-0.94 ms and 5,059, eight
// rounds); the scan alone reads it in 6.5 µs where the tokenizer took 80-90
// µs and 343 allocations (BenchmarkJudgeFloor).
//
// # Reading a new creative on every bid
//
// With per-bid ids in every creative, the markup gates read each one
// (gates' BenchmarkReadMarkupDistinct: digest, cache miss, reading, store),
// and the reading was most of it. What the readings do about it, each
// against what it replaced: scanTags, reading plain markup (no NUL, CR or
// '&'), records each start tag's attributes as its tagEnd meets them, and
// scannedTag lower-cases and dedups those spans where splitPlainTag read
// the tag's bytes a second time (sameScannedTags, in
// TestHTMLFastAgainstTokenizer and FuzzHTMLFast, compares the two tag for
// tag); a split tag's name and keys view the tokenizer's lower-case buffer
// instead of going through atom.Lookup (nothing reads them past the next
// tag, and a nested reading takes a tokenizer of its own);
// javascriptURL and dataDocument decline a URL of another scheme by
// schemeIs before cleaning it (TestURLSchemeShortcut, FuzzURLSchemeShortcut
// against the cleaning reading); the VAST walk looks element spellings up
// in a 512-slot open-addressed table hashed on length and three bytes, not
// a map (TestSpellingTableIsTheMap). Instructions per creative (valgrind
// lackey, GOGC=off, so untouched by the host's load): the banner 15,960 →
// 11,860, the VAST ad 20,850 → 19,570, the native ad 15,670 → 15,150; CPU
// time per creative (cpu-ns/op, the two builds in turn twelve times, load
// average 6-8, fastest and median): the banner 1.34 and 1.86 µs → 1.00
// and 1.22 µs, the VAST ad 1.69 and 2.12 µs → 1.56 and 1.77 µs.
//
// Then the scan keeps only the attributes element reads (readsRawKey,
// classifying a key as its bytes are read: class, width, alt and data-*
// are never recorded, lower-cased or deduplicated), a name or key without
// capitals is viewed in place rather than lower-cased into a copy, and
// element does not lower-case again what is ASCII lower case already
// (TestHTMLScanAgainstRef and FuzzHTMLScanRef against the reading before,
// kept in htmlref_test.go). The VAST walk checks the document's
// characters in one pass before lexing (an ASCII document's names need no
// second look, and the lexer's end no second check), keeps its lexer in
// the pooled walk, has the lexer check a start tag's attributes to its end
// at once (nothing of them is read), the lexer closes an element by
// comparing the open element's name in place and checks a short text or
// value in one loop (TestVASTWalkAgainstRef and FuzzVASTWalkRef against
// the walk and lexer before, kept in vastwalkref_test.go). A tag without
// an attribute element reads is skipped unless it is script or style.
// hasScheme finds an escape before a URL's first ':' in one pass that
// stops there. Instructions per read (cachegrind --cache-sim=no, the
// difference of two -test.benchtime counts): the banner 11,844 → 8,834,
// the VAST ad 19,470 → 16,258; CPU time per creative (cpu-ns/op, the two
// builds in turn eight times, load average 5-10, fastest and median, the
// banner at 8,977 instructions): the
// banner 0.91 and 0.96 µs → 0.67 and 0.70 µs, the VAST ad 1.40 and 1.53
// µs → 1.19 and 1.26 µs.
//
// HTML and script reading allocate (the parsers build trees): callers that
// need an allocation-free bid path cache the findings by the bytes read.
// Safe for concurrent use: no state outlives a call but the buffers of the
// pooled analyses, tokenizers and walks.
package markup
