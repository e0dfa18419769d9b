"""Word lists for the "ignore your previous instructions" family, in English and other languages.

English is matched word by word with edit-distance-1 tolerance (`fuzzy_set`); other languages by
stems co-occurring within a short window, because their inflection and word order vary (Japanese
and Korean put the object before the verb, German often puts the verb first).
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "EN_FORGET_VERBS",
    "EN_MODIFIERS",
    "EN_NEGATIONS",
    "EN_NOUNS_MEDIUM",
    "EN_NOUNS_STRONG",
    "EN_NOUNS_WEAK",
    "EN_NEG_FOLLOW",
    "EN_VERBS",
    "EN_WEAK_VERBS",
    "FOREIGN",
    "fuzzy_set",
]

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _edits1(word: str) -> set[str]:
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    deletes = {a + b[1:] for a, b in splits if b}
    transposes = {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
    replaces = {a + c + b[1:] for a, b in splits if b for c in _LETTERS}
    inserts = {a + c + b for a, b in splits for c in _LETTERS}
    return deletes | transposes | replaces | inserts


def fuzzy_set(words: Iterable[str], *, min_len: int = 6, exclude: Iterable[str] = ()) -> frozenset[str]:
    """``words`` plus every spelling one edit away for words of at least ``min_len`` letters.

    ``exclude`` removes real words that happen to be one edit away (e.g. "ignored" is fine, but
    "forged" is not "forget").
    """
    out: set[str] = set()
    for w in words:
        out.add(w)
        if len(w) >= min_len:
            out |= _edits1(w)
    return frozenset(out - set(exclude))


# Verbs that tell a reader to drop what it was told. "follow"/"obey" count only after a negation.
EN_VERBS = fuzzy_set(
    [
        "ignore", "ignoring", "disregard", "disregarding", "forget", "forgetting", "override",
        "overlook", "bypass", "neglect", "dismiss", "discard", "abandon", "skip", "ditch", "forgo",
        "forego", "nullify", "supersede", "supercede", "overwrite", "overrule", "circumvent",
        "scrap", "disobey", "unlearn",
    ],
    exclude=["forged", "forger", "forest", "ignite", "dismay"],
)  # fmt: skip
# Verbs that drop instructions only in context ("delete all rules" is also a firewall chore).
EN_WEAK_VERBS = frozenset(
    {"drop", "void", "cancel", "delete", "remove", "clear", "reset", "revoke", "rescind", "erase", "replace"}
)
EN_FORGET_VERBS = frozenset(
    {"forget", "forgetting", "ignore", "ignoring", "disregard", "overlook", "neglect"}
)
EN_NEGATIONS = frozenset(
    {"not", "don't", "dont", "never", "didn't", "won't", "cannot", "can't", "shouldn't", "t"}
)
EN_NEG_FOLLOW = frozenset(
    {"follow", "obey", "heed", "respect", "honor", "honour", "listen", "adhere", "comply"}
)

EN_MODIFIERS = fuzzy_set(
    [
        "previous", "previously", "prior", "above", "earlier", "preceding", "former", "foregoing",
        "original", "initial", "old", "existing", "all", "any", "every", "your", "system", "past",
        "aforementioned", "other", "current", "developer", "safety", "given", "those", "user",
        "user's", "users", "before", "everything", "anything", "default", "first", "starting",
        "base", "underlying", "built", "preset", "standing",
    ],
    exclude=["prison", "pastor"],
)  # fmt: skip

# Nouns that make the phrase an attack on the model's instructions (weight 1.0) or only suspicious.
EN_NOUNS_STRONG = fuzzy_set(
    [
        "instruction", "instructions", "instrucions", "directive", "directives", "prompt", "prompts",
        "guideline", "guidelines", "guidance", "programming", "training", "safeguards", "guardrails",
        "directions",
    ],
    exclude=["prompted", "prompter", "trading", "trainings", "commando", "commend"],
)  # fmt: skip
EN_NOUNS_MEDIUM = frozenset({"rules", "commands", "command", "constraints", "restrictions", "orders"})
EN_NOUNS_WEAK = frozenset(
    {"task", "tasks", "request", "requests", "context", "conversation", "policies", "policy",
     "settings", "limitations", "everything", "said", "told", "above", "text", "content"}
)  # fmt: skip

# (language, verb stems, noun stems, verb negations seen just before a verb).
# Stems are casefolded NFKC; both accented and unaccented spellings are listed.
FOREIGN: tuple[tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...]], ...] = (
    (
        "es",
        ("ignora", "ignore las", "ignore todas", "ignore todo", "ignoren", "olvida", "olvide", "olviden",
         "omite", "omita", "descarta", "descarte", "haz caso omiso", "haga caso omiso", "no hagas caso",
         "no haga caso", "pasa por alto", "pase por alto", "desobedece", "anula"),
        ("instrucci", "indicaciones", "órdenes", "ordenes", "reglas", "directrices", "consignas",
         "lo anterior", "mensajes anteriores", "prompt",
         "lo que te", "usuario", "petición", "peticion", "solicitud"),
        ("no ", "nunca "),
    ),
    (
        "fr",
        ("ignore toutes", "ignore tout", "ignore les", "ignorez", "ignorer", "oublie", "oubliez", "oublier", "ne tiens pas compte",
         "ne tenez pas compte", "fais abstraction", "faites abstraction", "négligez", "negligez",
         "passe outre", "passez outre", "écartez", "ecartez"),
        ("instructions", "consignes", "directives", "règles", "regles", "ordres", "indications",
         "ce qui précède", "ce qui precede", "prompt",
         "demande", "utilisateur"),
        ("n'", "ne pas ", "pas ", "jamais "),
    ),
    (
        "de",
        ("ignorier", "vergiss", "vergessen sie", "vergesst", "missachte", "missachten sie",
         "beachte nicht", "beachten sie nicht", "übergehe", "verwirf", "verwerfen sie", "setze außer kraft"),
        ("anweisung", "instruktion", "befehle", "regeln", "vorgaben", "richtlinien", "anordnung",
         "alles bisherige", "alles vorherige", "alles oben", "prompt",
         "bisherig", "vorherig", "obige", "zuvor", "benutzer", "nutzer", "anfrage"),
        ("nicht ", "nie "),
    ),
    (
        "it",
        ("ignora", "ignori", "ignorate", "dimentica", "dimenticate", "dimentichi", "non considerare",
         "trascura", "tralascia", "non seguire"),
        ("istruzion", "indicazion", "regole", "direttive", "comandi", "ordini", "prompt", "richiest",
         "utente", "precedent"),
        ("non ", "mai "),
    ),
    (
        "pt",
        ("ignore as", "ignore os", "ignore todas", "ignore todos", "ignore tudo", "ignora as", "ignora os",
         "ignorem", "esqueça", "esqueca", "esqueçam", "esquecam", "desconsidere",
         "desconsidera", "despreze", "não siga", "nao siga", "descarte"),
        ("instruç", "instrucoes", "instrucao", "orientaç", "orientacoes", "regras", "diretrizes", "comandos", "ordens", "prompt", "pedido", "usuário", "solicitaç", "anterior"),
        ("não ", "nao ", "nunca "),
    ),
    (
        "ru",
        ("игнорир", "проигнорир", "забудь", "забудьте", "не обращай", "пренебреги", "отбрось",
         "отбросьте", "отмени", "не следуй", "не выполняй", "не слушай"),
        ("инструкци", "указани", "команд", "правил", "предыдущ", "директив", "всё выше", "все выше",
         "промпт", "запрос",
         "пользовател", "сказано", "ранее"),
        ("не ", "никогда "),
    ),
    (
        "uk",
        ("ігноруй", "проігноруй", "забудь", "забудьте"),
        ("інструкці", "вказівк", "команд", "правил", "попередн"),
        ("не ",),
    ),
    (
        "zh",
        ("忽略", "忽视", "忽視", "无视", "無視", "忘记", "忘記", "忘掉", "不要理会", "不要理會", "别管",
         "別管", "不要遵循", "不要遵守", "不再遵守", "抛开", "拋開", "放弃", "放棄"),
        ("指令", "指示", "说明", "說明", "提示", "规则", "規則", "命令", "设定", "設定", "之前",
         "先前", "以上", "上述", "前面", "原来", "原來", "所有"),
        ("不要", "别", "別", "不能", "勿", "不会", "不會"),
    ),
    (
        "ja",
        ("無視", "忘れて", "忘れろ", "忘れなさい", "従わない", "従うな", "従わずに", "破棄"),
        ("指示", "命令", "指令", "ルール", "プロンプト", "以前", "これまで", "前の", "上記", "すべて"),
        (),
    ),
    (
        "ko",
        ("무시", "잊어", "잊고", "잊으", "따르지 마", "따르지 말"),
        ("지시", "명령", "지침", "규칙", "프롬프트", "이전", "앞의", "위의", "모든"),
        (),
    ),
    ("nl", ("negeer", "vergeet", "negeren"), ("instructie", "aanwijzing", "opdracht", "regels"), ("niet ",)),
    ("pl", ("zignoruj", "ignoruj", "zapomnij"), ("instrukcj", "polece", "zasad", "wytyczn"), ("nie ",)),
    ("tr", ("yok say", "görmezden gel", "gormezden gel", "unut"), ("talimat", "komut", "kural", "yönerge"), ()),
    ("ar", ("تجاهل", "انس ", "اهمل", "أهمل"), ("التعليمات", "تعليمات", "الأوامر", "الاوامر", "السابقة"), ("لا ",)),
    ("hi", ("अनदेखा", "भूल जा", "नज़रअंदाज़", "नजरअंदाज", "नज़रअंदाज"), ("निर्देश", "आदेश", "पिछले"), ("मत ", "न ")),
    ("vi", ("bỏ qua", "quên", "phớt lờ"), ("hướng dẫn", "chỉ dẫn", "lệnh", "chỉ thị", "trước đó"), ("đừng ", "không ")),
    ("id", ("abaikan", "lupakan"), ("instruksi", "perintah", "petunjuk", "arahan"), ("jangan ",)),
    ("sv", ("ignorera", "glöm", "strunta i"), ("instruktion", "anvisning", "regler"), ("inte ",)),
    ("da", ("ignorer", "glem"), ("instruktion", "anvisning", "regler"), ("ikke ",)),
    ("no", ("ignorer", "glem", "se bort fra"), ("instruks", "regler", "tidligere", "anvisning"), ("ikke ",)),
    (
        "el",
        ("αγνόησε", "αγνοησε", "αγνοήστε", "αγνοηστε", "ξέχασε", "ξεχασε", "ξεχάστε", "ξεχαστε", "παράβλεψε",
         "παραβλεψε", "παραβλέψτε", "μην ακολουθ", "αγνόησέ"),
        ("οδηγί", "οδηγι", "εντολ", "κανόν", "κανον", "προηγούμεν", "προηγουμεν", "παραπάνω", "παραπανω", "χρήστη"),
        ("μην ", "μη ", "δεν "),
    ),
    (
        "he",
        ("התעלם", "התעלמי", "התעלמו", "שכח את", "שכחי את", "שכחו את", "אל תציית", "אל תצייתי", "אל תקשיב", "בטל את"),
        ("הוראות", "ההוראות", "הנחיות", "ההנחיות", "כללים", "הכללים", "הקודמות", "הקודמים", "לעיל", "פקודות"),
        ("אל ", "לא "),
    ),
    ("cs", ("ignoruj", "zapomeň", "zapomen", "nedbej", "nevšímej"), ("pokyn", "instrukc", "příkaz", "prikaz", "pravidl", "předchozí", "predchozi"), ("ne",)),
    ("sk", ("ignoruj", "zabudni", "nevšímaj"), ("pokyn", "inštrukci", "instrukci", "príkaz", "pravidl", "predchádzajúc"), ("ne",)),
    ("ro", ("ignoră", "ignora", "ignorați", "ignorati", "uită", "uita", "uitați", "uitati"), ("instrucțiun", "instrucţiun", "instructiun", "comenzi", "reguli", "anterioar"), ("nu ",)),
    ("hu", ("hagyd figyelmen kívül", "hagyja figyelmen kívül", "felejtsd el", "felejtse el", "ne vedd figyelembe"), ("utasítás", "utasitas", "parancs", "szabály", "szabaly", "előző", "elozo"), ()),
    ("fi", ("ohita", "unohda", "älä noudata", "ala noudata", "jätä huomiotta"), ("ohje", "käsky", "kasky", "säänt", "saant", "aiemm", "edellis"), ()),
    ("th", ("เพิกเฉย", "ไม่ต้องสนใจ", "ลืม", "ละเว้น", "ละเลย"), ("คำสั่ง", "คำแนะนำ", "ก่อนหน้า", "ข้างต้น"), ()),
    ("fa", ("نادیده بگیر", "فراموش کن", "توجه نکن", "نادیده"), ("دستورالعمل", "دستورات", "قبلی", "دستور"), ()),
    ("bn", ("উপেক্ষা কর", "ভুলে যাও", "ভুলে যান"), ("নির্দেশ", "আগের"), ()),
    ("tl", ("huwag pansinin", "kalimutan", "balewalain"), ("tagubilin", "utos", "nakaraan", "patakaran"), ()),
    ("bg", ("игнорирай", "игнорирайте", "забрави", "забравете", "пренебрегни"), ("инструкци", "указани", "команд", "предишн", "правила"), ("не ",)),
    ("hr", ("ignoriraj", "ignoriši", "ignorisi", "zaboravi", "zanemari", "игнориши", "заборави", "занемари"), ("upute", "uputstv", "naredb", "pravil", "prethodn", "упутств", "наредб", "претходн"), ("ne ",)),
    ("ca", ("ignora les", "ignora totes", "oblida", "oblideu"), ("instruccions", "ordres", "regles", "anteriors"), ("no ",)),
    ("sw", ("puuza", "sahau"), ("maagizo", "maelekezo", "amri", "yaliyotangulia"), ("usi",)),
)  # fmt: skip
