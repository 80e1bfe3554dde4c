"""Make ``tests/data/encoder_reference.npz``: 240 varied texts and the vectors
``SentenceTransformer.encode`` gives them with the packaged MiniLM. The test
``tests/test_encoder_reference.py`` checks Cockpit's own encoder (the ONNX graph built from the
same weights, no torch) against them. Needs sentence-transformers and torch, which the project
itself does not::

    pip install torch==2.13.0 sentence-transformers
    HF_HUB_OFFLINE=1 python bench/make_reference_embeddings.py [--out tests/data/encoder_reference.npz]

The texts: empty and whitespace-only, short phrases, code, non-Latin scripts and emoji, notes
from the recall-dev corpus, and long texts past the model's 256-token window (truncation).
Vectors are stored as float16 (the rounding costs < 1e-6 of cosine).
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "recall-dev"

SHORT = [
    "", " ", "\n\t", "a", "?", "ok", "hello", "Hello, world!", "fix the build", "why is CI red",
    "what port does staging run on?", "Deploy with make ship-v2 from the repository root.",
    "rollback plan", "use postgres", "don't use mongo", "TODO", "v1.2.3", "42", "3.14159",
    "2026-12-02T06:22:17Z", "user@example.com", "https://example.com/a/b?c=d#e", "~/.config/cockpit",
    "C:\\Users\\me\\repo", "snake_case_identifier", "CamelCaseIdentifier", "kebab-case-name",
    "SCREAMING_CONSTANT", "--dry-run", "-Wall -Werror", "$HOME", "${VAR:-default}", "!!!", "...",
    "¯\\_(ツ)_/¯", "naïve café résumé", "straße", "ÆØÅ æøå", "İstanbul", "ﬁ ligature",
    "tab\tseparated\tvalues", "line one\nline two", "   leading and trailing   ", "ALL CAPS SENTENCE",
    "a b c d e f g", "the the the the", "0 1 2 3 4 5 6 7 8 9", "#hashtag @mention", "<html></html>",
    "SELECT * FROM notes WHERE id = 1;", "merge conflict in README.md", "bump dependency versions",
    "the flaky test in tests/test_cart.py", "Cart.total ignores qty", "refactor the payment module",
    "add retry with exponential backoff", "rate limit the public API", "rotate the signing keys",
    "migrate the database schema", "tune the garbage collector", "cache invalidation strategy",
]
CODE = [
    "def f(x):\n    return x ** 2",
    "import numpy as np\nprint(np.arange(10).sum())",
    "for (let i = 0; i < n; i++) { total += items[i].qty * items[i].price; }",
    "fn main() { println!(\"hello\"); }",
    "SELECT name, COUNT(*) FROM users GROUP BY name HAVING COUNT(*) > 1;",
    "#include <stdio.h>\nint main(void) { return 0; }",
    "git rebase -i HEAD~3 && git push --force-with-lease",
    "docker run --rm -it -v $(pwd):/src python:3.11 bash",
    "kubectl rollout restart deployment/api -n staging",
    "class Cart:\n    def total(self):\n        return sum(i.price for i in self.items)",
    "const x = await fetch(url).then(r => r.json());",
    "{\"name\": \"cockpit\", \"version\": \"0.1.0\"}",
    "name: deploy\non: [push]\njobs:\n  build:\n    runs-on: ubuntu-latest",
    "[server]\nlisten = \"127.0.0.1:7777\"\n[sandbox]\nnetwork = \"ask\"",
    "func (s *Server) Handle(w http.ResponseWriter, r *http.Request) {}",
    "public static void main(String[] args) { System.out.println(args.length); }",
    "$ pytest -q tests/test_cart.py::test_total -x",
    "Traceback (most recent call last):\n  File \"app.py\", line 3, in <module>\nKeyError: 'qty'",
    "error[E0382]: borrow of moved value: `v`",
    "TypeError: Cannot read properties of undefined (reading 'map')",
    "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a = 1\n+a = 2",
    "lambda x: (x, x) if x else None",
    "#!/usr/bin/env bash\nset -euo pipefail\necho \"$@\"",
    "@pytest.mark.parametrize('n', [1, 2, 3])\ndef test_n(n): assert n",
    "async def main():\n    async with asyncio.timeout(2):\n        await server.start()",
    "regex: ^(?P<key>[a-z_]+)\\s*=\\s*(?P<value>.*)$",
    "0x7fffffff & ~mask | (1 << 12)",
    "ls -la | grep -v '^d' | awk '{print $9}' | sort -u",
    "CREATE INDEX CONCURRENTLY idx_orders_user ON orders (user_id);",
    "try:\n    run()\nexcept (OSError, ValueError) as exc:\n    log.warning('failed: %s', exc)",
]
NON_LATIN = [
    "日本語のテキストを埋め込みます", "数据库迁移计划", "部署到生产环境之前运行测试", "한국어 문장입니다",
    "Развернуть сервис на промежуточном сервере", "Ошибка в тесте корзины", "Ελληνικά κείμενα",
    "مرحبا بالعالم", "نشر التطبيق", "שלום עולם", "नमस्ते दुनिया", "परीक्षण विफल हुआ", "สวัสดีชาวโลก",
    "Tiếng Việt có dấu", "ქართული ენა", "Հայերեն", "ኢትዮጵያ", "தமிழ் உரை", "বাংলা লেখা",
    "🚀 deploy", "✅ tests pass ❌ lint fails", "🙂🙃😉", "⚠️ breaking change", "→ ← ↑ ↓", "∑ ∫ √ ∞ ≈ ≠",
    "中文 and English mixed 混合", "Ça marche très bien", "Größenänderung der Datenbank",
    "ñandú pingüino", "Zürich über Köln", "東京タワー", "Ａｌｌ ｗｉｄｅ", "\u200b zero width \u200d",
    "combining e\u0301 accent", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math letters", "\U0001f9ea test tube",
]


def long_texts(rng: random.Random) -> list[str]:
    words = ("deploy database schema migration rollback staging production cache latency retry "
             "service client server queue worker token budget index vector note decision review "
             "merge branch commit sandbox network proxy permission session agent model prompt").split()
    out = []
    for n in (120, 200, 260, 300, 400, 600, 900, 1500):
        out.append(" ".join(rng.choice(words) for _ in range(n)))
    out.append("word " * 1000)
    out.append("x" * 3000)
    out.append("日本語" * 400)
    out.append("def f(x):\n    return x\n" * 80)
    out.append(". " * 700)
    return out


def corpus_texts(rng: random.Random, n: int) -> list[str]:
    files = sorted((SHARED / "notes").rglob("*.md")) + sorted((SHARED / "realworld").rglob("*.md"))
    picked = rng.sample(files, min(n, len(files))) if files else []
    out = [p.read_text(encoding="utf-8", errors="replace")[:2000] for p in picked]
    for line in (SHARED / "queries.jsonl").read_text(encoding="utf-8").splitlines()[:30]:
        out.append(json.loads(line).get("query", ""))
    return out


def texts() -> list[str]:
    rng = random.Random(20261202)
    return SHORT + CODE + NON_LATIN + long_texts(rng) + corpus_texts(rng, 70)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "tests" / "data" / "encoder_reference.npz"))
    args = ap.parse_args()
    from sentence_transformers import SentenceTransformer

    from memory.embedder import packaged_model_path

    items = texts()
    st = SentenceTransformer(str(packaged_model_path()), device="cpu")
    vecs = st.encode(items, normalize_embeddings=True, convert_to_numpy=True, batch_size=16)
    np.savez_compressed(args.out, texts=np.array(json.dumps(items, ensure_ascii=False)),
                        vectors=vecs.astype(np.float16))
    print(f"{len(items)} texts, {vecs.shape[1]} dims → {args.out}")


if __name__ == "__main__":
    main()
