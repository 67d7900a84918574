"""The built-in model: deterministic, extractive answers to every research task.

It answers from the request's structured ``inputs`` — never by reading the
prompt text — so the same inputs always give the same answer, offline, with
no keys. Every claim it proposes is a sentence of a passage it was given,
quoted verbatim, so provenance holds by construction. Where a task asks for
judgement it cannot make (a tie-break), it says so with low confidence.

The application registers :data:`HANDLERS` as the router's built-in task
handlers and as the fault server's responder.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from research.code_names import LITERAL, RST_ROLE, api_match, code_salience, opens_with_api
from research.extractive_planning import QUERY_NOISE, hypotheses, react_step, scope
from research.polarity import opposite_polarity, statement
from research.relevance import RELEVANCE_FLOOR
from research.tasks import (
    AnalysisAnswer,
    Answer,
    ContradictionAnswer,
    FoundContradiction,
    ProposedClaim,
    SynthesisAnswer,
    SynthesisSection,
    TieBreakChoice,
    Verdict,
    VerificationAnswer,
    VerificationPlan,
    VerificationQuestion,
)
from research.text import (
    BM25,
    SENTENCE_END,
    centrality,
    cosine,
    depends_on_context,
    normalize_space,
    sentences,
    stem,
    terms,
    versions,
    words,
)

LENS_TERMS: dict[str, frozenset[str]] = {
    "ai": frozenset(
        stem(w)
        for w in (
            "concept",
            "concepts",
            "definition",
            "defines",
            "define",
            "semantics",
            "rationale",
            "motivation",
            "because",
            "design",
            "trade",
            "tradeoff",
            "tradeoffs",
            "goal",
            "goals",
            "problem",
            "purpose",
            "idea",
            "proposal",
            "abstract",
            "meaning",
            "principle",
            "intended",
            "reason",
            "why",
            "benefit",
            "drawback",
            "consistent",
        )
    ),
    "swe": frozenset(
        stem(w)
        for w in (
            "implementation",
            "implement",
            "implemented",
            "example",
            "usage",
            "syntax",
            "function",
            "module",
            "method",
            "version",
            "versions",
            "compatibility",
            "compatible",
            "backward",
            "backwards",
            "api",
            "code",
            "library",
            "call",
            "return",
            "argument",
            "release",
            "released",
            "install",
            "package",
            "interpreter",
            "cpython",
            "attribute",
            "class",
            "import",
            "deprecated",
            "supported",
            "runtime",
        )
    ),
}

CODE_SALIENCE_WEIGHT = 0.5
API_MATCH_WEIGHT = 1.0
"""A relevant sentence naming an API whose words are the sub-question's weighs this much more
(times the share of its terms the API carries: see api_match): a how-to question is answered by
the function that does it, not by a sentence about the module around it."""
"""A sentence naming the code the passages name most weighs this much more (see code_salience)."""
SUBJECT_PHRASE_WEIGHT = 1.0
SUBJECT_TERMS_WEIGHT = 0.6
SUBJECT_TITLE_WEIGHT = 0.4
SOURCE_REPEAT_PENALTY = 0.6
"""A source already quoted weighs less for the next claim, so the answer draws on many documents."""
SELECTION_WEIGHT = 1.0
"""A sentence of the document the run's selection ranked first weighs this much more, one of a
document at the relevance floor nothing, linearly between (see selection_weight): the selection
read the whole question, a sub-question's few terms do not."""
MAX_JOINED_CLAIM = 500
MAX_INTRODUCED_CODE_LINES = 15
"""The most lines of code a statement that introduces it is quoted with (introduced_code): a short
example — an interactive call and its traceback runs to about fifteen lines (the language
reference's ``pdb.pm()`` doctest: 14) — is the statement's point; a longer block is a listing, not
one statement's point, and would make a claim no reader takes in at a glance."""
SHORT_STATEMENT_WORDS = 3
SUPPORT_COVERAGE = 0.6
SUPPORT_MIN_SHARED = 4
CONTRADICTION_SIMILARITY = 0.45
STATUS_SIMILARITY = 0.35
WEAK_STATUSES = frozenset({"superseded", "rejected", "withdrawn"})
STRONG_STATUSES = frozenset({"final", "active", "accepted"})

_REFERENCE = re.compile(r"`([^`<]+?)(?:\s*<[^>]*>)?`_+")
_FOOTNOTE = re.compile(r"\s*\[\d+\]_")


def _role_text(match: re.Match[str]) -> str:
    """``:pep:`634``` → "PEP 634"; any other role → its text."""
    role, text = match.group(1), match.group(2).strip()
    return f"{role.upper()} {int(text)}" if role in ("pep", "rfc") and text.isdigit() else text


def clean_sentence(sentence: str) -> str:
    """A quoted sentence made readable: RST roles, literals and footnote marks unwrapped."""
    text = RST_ROLE.sub(_role_text, sentence)
    text = LITERAL.sub(lambda m: m.group(1), text)
    text = _REFERENCE.sub(lambda m: m.group(1), text)
    text = _FOOTNOTE.sub("", text)
    return normalize_space(text)


# -- analysts: extractive claims through a lens ---------------------------------
def claim_candidates(passage: dict[str, Any]) -> list[str]:
    """Sentences of a passage that can stand as claims, verbatim.

    A sentence that leans on the one before it ("However, …", "It …") is taken together
    with that sentence when the two are adjacent in the passage, and left out otherwise.
    """
    text = normalize_space(passage["text"])
    found: list[str] = []
    previous = ""
    # a passage of short statements only (an aphorism a line) offers those rather than nothing
    found_sentences = sentences(passage["text"]) or sentences(
        passage["text"], min_words=SHORT_STATEMENT_WORDS
    )
    for sentence in found_sentences:
        sentence = normalize_space(sentence)
        if sentence[:1].islower() and not opens_with_api(sentence):
            previous = sentence
            continue  # a fragment: the passage cut its sentence short
        if not depends_on_context(sentence):
            found.append(sentence)
        elif previous and not depends_on_context(previous):
            joined = f"{previous} {sentence}"
            if joined in text and len(joined) <= MAX_JOINED_CLAIM:
                found.append(joined)
        previous = sentence
    return found + [s for s in introduced_code(passage["text"]) if s not in found]


def introduced_code(text: str) -> list[str]:
    """Statements that introduce the code after them, quoted with it, verbatim.

    A paragraph ending in an unfinished statement ("This module provides two functions for each
    color system ABC:", "Tip: to use the tab key as the completion key, call") followed by a
    paragraph that opens with code (:func:`opens_with_code`: ``rgb_to_abc(r, g, b) --> a, b, c``,
    ``readline.parse_and_bind("tab: complete")``) says its point only with what follows; alone
    each is no sentence, so the API a how-to question asks for was read and never quoted. The
    following paragraph must open with code, not merely hold no sentence: a docstring's summary
    line has no period, and neither has many a prose paragraph of a docstring, so "holds no
    sentence" joined one summary line to the next paragraph's prose ("Find a "loader" object for
    fullname" / "This is a backwards compatibility wrapper around importlib.util.find_spec …" in
    ``pkgutil``) and the quote was two fragments, not a statement and its code. A statement that
    leans on the one before it ("This …", "It …") is left out, as the report would leave it out;
    so is code of more than :data:`MAX_INTRODUCED_CODE_LINES` lines, and a quote longer than
    :data:`MAX_JOINED_CLAIM` characters.
    """
    raw_blocks = re.split(r"\n\s*\n", text)
    blocks = [normalize_space(b) for b in raw_blocks]
    whole = normalize_space(text)
    found: list[str] = []
    for lead, after, code in zip(blocks, blocks[1:], raw_blocks[1:], strict=False):
        tail = SENTENCE_END.split(lead)[-1].strip() if lead else ""
        if (
            not tail[:1].isupper()
            or tail[-1:] in ".!?"
            or len(words(tail)) < SHORT_STATEMENT_WORDS
            or depends_on_context(tail)
            or not after
            or sentences(after, min_words=SHORT_STATEMENT_WORDS)
            or not (tail.endswith("::") or opens_with_code(code))
            or len(code.strip().splitlines()) > MAX_INTRODUCED_CODE_LINES
        ):
            continue
        joined = f"{tail} {after}"
        if len(joined) <= MAX_JOINED_CLAIM and joined in whole:
            found.append(joined)
    return found


_CALL = re.compile(r"@[A-Za-z_]|[A-Za-z_][\w.]*\(")
"""A decorator, or a name directly followed by its parenthesis: a call or an API's signature
(``rgb_to_abc(r, g, b) --> a, b, c``). Prose puts a space before a parenthesis."""
_GRAMMAR_RULE = re.compile(r"[a-z_]\w*\s+::=")
"""A grammar production, the notation the language reference gives syntax in
(``while_stmt ::= "while" assignment_expression ":" suite``)."""
_PROMPTS = (">>>", "$ ", "```", "~~~")
"""An interactive session (Python's prompt, a shell's) or a Markdown code fence."""
_LIST_ITEM = re.compile(r"[-*+]\s+")


def opens_with_code(paragraph: str) -> bool:
    """Whether a paragraph's first line is code rather than prose.

    Code is told from the line itself, not from its indentation: the passages the analysts read
    hold each paragraph with its first line stripped (research.loaders.split_passages), so an
    indented block looks like any other there (what says a literal block follows is the
    statement's own ``::``, which :func:`introduced_code` reads). The line is code when it is a
    prompt or a code fence, a decorator, a call or an API's signature (a name directly followed
    by its parenthesis), a grammar production, or a line Python parses as a statement that is
    more than a word — an assignment, an import, a compound statement's header, a comment, an
    expression with an operator or a dotted name. A line of prose does not parse ("This is a
    backwards compatibility wrapper around …"); a single word does, and is no code
    ("Examples"). A list item is judged by what follows its bullet
    (``- finish_request(request, client_address)``).
    """
    lines = paragraph.strip().splitlines()
    first = _LIST_ITEM.sub("", lines[0].strip(), count=1) if lines else ""
    if first.startswith(_PROMPTS) or _CALL.match(first) or _GRAMMAR_RULE.match(first):
        return True
    return _python_statement(first)


def _python_statement(line: str) -> bool:
    """Whether ``line`` parses as Python and is more than a bare word or literal; a compound
    statement's header (``with cm:``) is read with a body put after it."""
    source = f"{line}\n    pass" if line.endswith(":") else line
    try:
        body = ast.parse(source).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False  # not Python, or nested past what the parser takes: prose to us
    if not body:
        return line.startswith("#")  # a comment: no statement, yet code
    first = body[0]
    return not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Name | ast.Constant))


def analyze(inputs: dict[str, Any]) -> AnalysisAnswer:
    lens = str(inputs["lens"])
    lens_terms = LENS_TERMS[lens]
    per_question = int(inputs.get("max_claims_per_sub_question", 2))
    known = {normalize_space(t).lower() for t in inputs.get("known_claims", [])}
    subject = normalize_space(str(inputs.get("subject", ""))).lower()
    subject_terms = set(terms(subject))
    candidates: list[tuple[str, dict[str, Any]]] = []
    for passage in inputs.get("passages", []):
        for sentence in claim_candidates(passage):
            candidates.append((sentence, passage))
    if not candidates:
        return AnalysisAnswer(lens=lens, claims=[])
    texts = [c[0] for c in candidates]
    index = BM25(texts)
    candidate_terms = [
        doc.keys() for doc in index.docs
    ]  # each sentence's terms, as BM25 already counted them
    vocabulary = set().union(*candidate_terms)
    central = centrality(texts) if len(texts) <= 400 else [0.0] * len(texts)
    cleaned_texts = [clean_sentence(t) for t in texts]
    salience = code_salience(texts)
    about = [
        subject_weight(sentence, passage, subject, subject_terms, candidate_terms[i])
        for i, (sentence, passage) in enumerate(candidates)
    ]
    selected = [selection_weight(passage) for _, passage in candidates]
    used: set[str] = set()
    cited: Counter[str] = Counter()
    claims: list[ProposedClaim] = []
    for sub in inputs.get("sub_questions", []):
        query_terms = identifier_parts(
            [stem(t) for t in sub.get("key_terms", [])] or terms(sub["text"]), vocabulary
        )
        relevance = index.scores(query_terms)
        if not any(relevance):
            # no sentence names the sub-question's terms: those of a document whose title does
            # ("The Zen of Python" for "What is the Zen of Python?") are about it all the same
            wanted = set(query_terms)
            relevance = [
                float(bool(wanted & set(terms(str(passage.get("title", ""))))))
                for _, passage in candidates
            ]
        top = max(relevance) or 1.0
        taken = 0
        while taken < per_question:
            best: tuple[float, int] | None = None
            for i, (sentence, passage) in enumerate(candidates):
                lowered = cleaned_texts[i].lower()
                if relevance[i] <= 0 or lowered in used:
                    continue
                if lowered in known or sentence.lower() in known:
                    continue
                lens_hits = len(candidate_terms[i] & lens_terms)
                score = (
                    (relevance[i] / top)
                    * (
                        0.25
                        + lens_hits
                        + API_MATCH_WEIGHT
                        * api_match(texts[i], query_terms, str(passage.get("section", "")))
                    )
                    + 0.3 * central[i]
                    + 0.2 * float(passage.get("authority", 0.5))
                    + about[i]
                    + CODE_SALIENCE_WEIGHT * salience[i]
                    + selected[i]
                ) / (1 + SOURCE_REPEAT_PENALTY * cited[passage.get("source_id", "")])
                key = (round(score, 6), -i)
                if best is None or key > (best[0], -best[1]):
                    best = (round(score, 6), i)
            if best is None:
                break
            sentence, passage = candidates[best[1]]
            cleaned = cleaned_texts[best[1]]
            used.add(cleaned.lower())
            cited[passage.get("source_id", "")] += 1
            claims.append(
                ProposedClaim(
                    text=cleaned,
                    quote=sentence,
                    sub_question=sub["id"],
                    passage_ids=[passage["id"]],
                )
            )
            taken += 1
    return AnalysisAnswer(lens=lens, claims=claims)


def selection_weight(passage: dict[str, Any]) -> float:
    """How much more a sentence of ``passage`` weighs: :data:`SELECTION_WEIGHT` when its document
    is the one the run's selection ranks first against the whole question (relevance 1), nothing
    at the relevance floor, linearly between. A passage's ``relevance`` is its document's, the
    number the selection ranks by (research.relevance, remembered per question); the analysis
    step gives every passage its own (research.steps.common.passage_inputs). A passage given
    without one was ranked by no selection, so it weighs nothing — not as much as the first."""
    given = passage.get("relevance")
    if given is None:
        return 0.0
    share = (float(given) - RELEVANCE_FLOOR) / (1 - RELEVANCE_FLOOR)
    return SELECTION_WEIGHT * min(1.0, max(0.0, share))


def identifier_parts(query_terms: list[str], vocabulary: set[str]) -> list[str]:
    """The terms, and the parts of each compound identifier among them that the sentences do
    not hold whole (``lru_cache`` → ``lru``, ``cache``; ``contextmanager`` → ``context``,
    ``manager`` when both are words of the sentences): prose names a thing in plain words more
    often than by its name."""
    found = list(query_terms)
    for term in query_terms:
        if term in vocabulary:
            continue
        if "_" in term:
            found.extend(terms(term.replace("_", " ")))
            continue
        for cut in range(3, len(term) - 2):
            head, tail = stem(term[:cut]), stem(term[cut:])
            if head in vocabulary and tail in vocabulary:
                found.extend((head, tail))
                break
    return list(dict.fromkeys(found))


def subject_weight(
    sentence: str,
    passage: dict[str, Any],
    subject: str,
    subject_terms: set[str],
    sentence_terms: Any,
) -> float:
    """How squarely a sentence is about the question's subject (its phrase, its terms, its title)."""
    if not subject:
        return 0.0
    phrase = " ".join(words(re.sub(r"^(the|a|an)\s+", "", subject)))
    weight = SUBJECT_PHRASE_WEIGHT if f" {phrase} " in f" {' '.join(words(sentence))} " else 0.0
    if subject_terms:
        weight += (
            SUBJECT_TERMS_WEIGHT * len(subject_terms & set(sentence_terms)) / len(subject_terms)
        )
        title_terms = set(terms(str(passage.get("title", ""))))
        weight += SUBJECT_TITLE_WEIGHT * len(subject_terms & title_terms) / len(subject_terms)
    return weight


# -- chain of verification -------------------------------------------------------
def _verification_terms(text: str, attempt: int) -> list[str]:
    distinct = list(
        dict.fromkeys(
            w
            for w in words(text)
            if len(w) > 2 and stem(w) not in {"pep"} and w not in QUERY_NOISE and terms(w)
        )
    )
    if attempt % 3 == 1:
        distinct = sorted(distinct, key=lambda w: (-len(w), w))
    elif attempt % 3 == 2:
        distinct = distinct[2:] + distinct[:2]
    return distinct[:7]


def plan_verification(inputs: dict[str, Any]) -> VerificationPlan:
    questions = []
    for claim in inputs.get("claims", []):
        attempt = int(claim.get("attempts", 0))
        query_terms = _verification_terms(claim["text"], attempt)
        questions.append(
            VerificationQuestion(
                claim_id=claim["id"],
                question=f"Is it so that: {claim['text']}",
                query=" ".join(query_terms),
            )
        )
    return VerificationPlan(questions=questions)


def verify_claims(inputs: dict[str, Any]) -> VerificationAnswer:
    verdicts = []
    candidates = inputs.get("candidates", {})
    for claim in inputs.get("claims", []):
        claim_terms = set(terms(claim["text"]))
        own = set(claim.get("source_ids", []))
        best: tuple[float, str, int] | None = None
        for passage in candidates.get(claim["id"], []):
            if passage["source_id"] in own:
                continue
            shared = claim_terms & set(terms(passage["text"]))
            coverage = len(shared) / len(claim_terms) if claim_terms else 0.0
            if coverage >= SUPPORT_COVERAGE and len(shared) >= SUPPORT_MIN_SHARED:
                if best is None or (coverage, -len(shared)) > (best[0], -best[2]):
                    best = (coverage, passage["passage_id"], len(shared))
        if best:
            verdicts.append(
                Verdict(
                    claim_id=claim["id"],
                    supported=True,
                    supporting_passage_ids=[best[1]],
                    rationale=f"{best[2]} of {len(claim_terms)} claim terms in an independent source",
                )
            )
        else:
            verdicts.append(
                Verdict(
                    claim_id=claim["id"],
                    supported=False,
                    rationale="no passage of another source supports it",
                )
            )
    return VerificationAnswer(verdicts=verdicts)


def detect_contradictions(inputs: dict[str, Any]) -> ContradictionAnswer:
    """Pairs of claims of different sources on one sub-question that disagree.

    *status*: a rejected, withdrawn or superseded source and a final or active one on one point
    (cosine ≥ :data:`STATUS_SIMILARITY`). Past cosine ≥ :data:`CONTRADICTION_SIMILARITY`:
    *numeric*, both name versions and none in common; *negation*, the same statement with
    opposite polarity (:func:`research.polarity.opposite_polarity`) — not merely one of two
    similar sentences holding a negation word, which flagged different statements about one
    subject (PEP 333 and PEP 3333 on headers and middleware) and vetoed good rounds.
    """
    claims = list(inputs.get("claims", []))
    vectors = [Counter(terms(c["text"])) for c in claims]
    read = [statement(c["text"]) for c in claims]
    found: list[FoundContradiction] = []
    for i, a in enumerate(claims):
        for j in range(i + 1, len(claims)):
            b = claims[j]
            if a["sub_question"] != b["sub_question"] or set(a["source_ids"]) & set(
                b["source_ids"]
            ):
                continue
            similarity = cosine(vectors[i], vectors[j])
            statuses_a = {s.lower() for s in a.get("statuses", [])}
            statuses_b = {s.lower() for s in b.get("statuses", [])}
            weak_strong = (
                statuses_a and statuses_a <= WEAK_STATUSES and statuses_b & STRONG_STATUSES
            ) or (statuses_b and statuses_b <= WEAK_STATUSES and statuses_a & STRONG_STATUSES)
            if weak_strong and similarity >= STATUS_SIMILARITY:
                found.append(
                    FoundContradiction(
                        claim_a=a["id"],
                        claim_b=b["id"],
                        kind="status",
                        detail=f"{'/'.join(sorted(statuses_a))} vs "
                        f"{'/'.join(sorted(statuses_b))} on one point",
                    )
                )
                continue
            if similarity < CONTRADICTION_SIMILARITY:
                continue
            nums_a, nums_b = versions(a["text"]), versions(b["text"])
            if nums_a and nums_b and not nums_a & nums_b:
                found.append(
                    FoundContradiction(
                        claim_a=a["id"],
                        claim_b=b["id"],
                        kind="numeric",
                        detail=f"{', '.join(sorted(nums_a))} vs {', '.join(sorted(nums_b))}",
                    )
                )
            elif opposite_polarity(read[i], read[j]):
                found.append(
                    FoundContradiction(
                        claim_a=a["id"],
                        claim_b=b["id"],
                        kind="negation",
                        detail="one states what the other negates",
                    )
                )
    return ContradictionAnswer(contradictions=found)


# -- synthesis -------------------------------------------------------------------
def synthesize(inputs: dict[str, Any]) -> SynthesisAnswer:
    """Per sub-question, the claims that answer it best, drawing on as many documents as it can."""
    claims = list(inputs.get("claims", []))
    per_section = int(inputs.get("max_per_section", 4))
    sections = []
    lead: list[str] = []
    chosen_sources: Counter[str] = Counter()
    for sub in inputs.get("sub_questions", []):
        members = [c for c in claims if c["sub_question"] == sub["id"]]
        if not members:
            sections.append(SynthesisSection(sub_question=sub["id"], claim_ids=[], summary=""))
            continue
        index = BM25([c["text"] for c in members])
        relevance = index.scores(sub.get("key_terms") and " ".join(sub["key_terms"]) or sub["text"])
        central = centrality([c["text"] for c in members])
        wanted = terms(" ".join(sub.get("key_terms") or [sub["text"]]))
        merit = [
            relevance[i]
            + central[i]
            + (0.5 if members[i].get("verified") else 0.0)
            + API_MATCH_WEIGHT
            * api_match(members[i]["text"], wanted, members[i].get("section", ""))
            + selection_weight(members[i])
            for i in range(len(members))
        ]
        chosen: list[int] = []
        while len(chosen) < min(per_section, len(members)):
            pick = min(
                (i for i in range(len(members)) if i not in chosen),
                key=lambda i: (
                    -merit[i] / (1 + SOURCE_REPEAT_PENALTY * _repeats(members[i], chosen_sources)),
                    members[i]["id"],
                ),
            )
            chosen.append(pick)
            chosen_sources.update(members[pick].get("source_ids", []))
        sections.append(
            SynthesisSection(
                sub_question=sub["id"],
                claim_ids=[members[i]["id"] for i in chosen],
                summary=members[chosen[0]]["text"],
            )
        )
        lead.append(members[chosen[0]]["text"])
    return SynthesisAnswer(summary=" ".join(lead[:3]), sections=sections)


def _repeats(claim: dict[str, Any], chosen_sources: Counter[str]) -> int:
    return sum(chosen_sources[s] for s in claim.get("source_ids", []))


# -- tie-break ---------------------------------------------------------------------
def tie_break(inputs: dict[str, Any]) -> TieBreakChoice:
    targets = list(inputs.get("valid_targets", []))
    default = str(inputs.get("default_target") or (targets[0] if targets else ""))
    context_terms = set(terms(f"{inputs.get('hint', '')} {inputs.get('context', '')}"))
    best, best_overlap = default, 0
    for target in targets:
        overlap = len(set(terms(target.replace("_", " "))) & context_terms)
        if overlap > best_overlap:
            best, best_overlap = target, overlap
    confidence = min(0.4, 0.2 + 0.05 * best_overlap)
    return TieBreakChoice(
        target=best,
        confidence=confidence,
        reasoning=(
            f"extractive model: {best!r} shares {best_overlap} terms with the hint and "
            "context; it cannot weigh the options, so a person should confirm"
        ),
    )


HANDLERS: dict[str, Callable[[dict[str, Any]], Answer]] = {
    "research.scope": scope,
    "research.hypotheses": hypotheses,
    "research.react_step": react_step,
    "research.analyze": analyze,
    "research.plan_verification": plan_verification,
    "research.verify_claims": verify_claims,
    "research.detect_contradictions": detect_contradictions,
    "research.synthesize": synthesize,
    "tie_break": tie_break,
}


def respond(task: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """The answer to ``task`` as JSON-able data (the fault server's responder shape)."""
    handler = HANDLERS.get(task)
    if handler is None:
        raise KeyError(f"the extractive model has no handler for task {task!r}")
    return handler(inputs).model_dump(mode="json")
