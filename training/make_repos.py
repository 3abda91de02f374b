"""Write training/repos.json, the repository manifest of the pair miner (mine_pairs.py).

Every `split: "train"` repository of bench/training_repos.json (same pinned commits), then the ADDED
repositories below, each pinned to the newest commit of the mirror the `fetch` tool brought
(MIRRORS/<owner>+<name>/repo). The licence is read from the top-level licence files at the pinned
commit; a repository without a permissive licence, one that is reserved for evaluation (or shares a
reserved repository's name), a bench validation/eval repository, or one without a mirror is left out
and listed on stderr. VALIDATION names the added repositories held out for model selection.

Usage:
    python training/make_repos.py [--mirrors /work/.mirror] [--out training/repos.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import mine_pairs as mp

# (repo, primary language); none is a fork of a reserved repository.
ADDED: list[tuple[str, str]] = [
    # python
    ("psf/black", "python"),
    ("pytest-dev/pytest", "python"),
    ("urllib3/urllib3", "python"),
    ("tornadoweb/tornado", "python"),
    ("benoitc/gunicorn", "python"),
    ("celery/celery", "python"),
    ("scrapy/scrapy", "python"),
    ("sqlalchemy/sqlalchemy", "python"),
    ("python-jsonschema/jsonschema", "python"),
    ("getsentry/sentry-python", "python"),
    ("pypa/pip", "python"),
    ("networkx/networkx", "python"),
    ("aio-libs/yarl", "python"),
    ("aio-libs/multidict", "python"),
    ("pallets/itsdangerous", "python"),
    ("encode/django-rest-framework", "python"),
    ("Textualize/textual", "python"),
    ("tiangolo/sqlmodel", "python"),
    ("python-poetry/poetry", "python"),
    ("sphinx-doc/sphinx", "python"),
    ("ipython/ipython", "python"),
    ("mitmproxy/mitmproxy", "python"),
    ("boto/boto3", "python"),
    # javascript
    ("lodash/lodash", "javascript"),
    ("chalk/chalk", "javascript"),
    ("moment/moment", "javascript"),
    ("eslint/eslint", "javascript"),
    ("mochajs/mocha", "javascript"),
    ("markedjs/marked", "javascript"),
    ("mde/ejs", "javascript"),
    ("Automattic/mongoose", "javascript"),
    ("knex/knex", "javascript"),
    ("debug-js/debug", "javascript"),
    ("jquery/jquery", "javascript"),
    ("mholt/PapaParse", "javascript"),
    ("highlightjs/highlight.js", "javascript"),
    ("hapijs/hapi", "javascript"),
    ("nodejs/undici", "javascript"),
    ("prettier/prettier", "javascript"),
    ("webpack/webpack", "javascript"),
    ("jashkenas/underscore", "javascript"),
    ("jashkenas/backbone", "javascript"),
    ("acornjs/acorn", "javascript"),
    ("Leaflet/Leaflet", "javascript"),
    ("chartjs/Chart.js", "javascript"),
    ("nodemailer/nodemailer", "javascript"),
    ("mishoo/UglifyJS", "javascript"),
    # typescript
    ("vuejs/core", "typescript"),
    ("typeorm/typeorm", "typescript"),
    ("ReactiveX/rxjs", "typescript"),
    ("TanStack/query", "typescript"),
    ("date-fns/date-fns", "typescript"),
    ("apollographql/apollo-client", "typescript"),
    ("graphql/graphql-js", "typescript"),
    ("mobxjs/mobx", "typescript"),
    ("statelyai/xstate", "typescript"),
    ("vitejs/vite", "typescript"),
    ("remix-run/react-router", "typescript"),
    ("drizzle-team/drizzle-orm", "typescript"),
    ("typestack/class-validator", "typescript"),
    ("cheeriojs/cheerio", "typescript"),
    ("immutable-js/immutable-js", "typescript"),
    ("socketio/socket.io", "typescript"),
    ("rollup/rollup", "typescript"),
    ("jestjs/jest", "typescript"),
    ("sequelize/sequelize", "typescript"),
    ("ionic-team/stencil", "typescript"),
    ("microsoft/playwright", "typescript"),
    # go
    ("gohugoio/hugo", "go"),
    ("prometheus/prometheus", "go"),
    ("etcd-io/etcd", "go"),
    ("caddyserver/caddy", "go"),
    ("gofiber/fiber", "go"),
    ("spf13/afero", "go"),
    ("uber-go/zap", "go"),
    ("rs/zerolog", "go"),
    ("redis/go-redis", "go"),
    ("jmoiron/sqlx", "go"),
    ("go-gorm/gorm", "go"),
    ("grpc/grpc-go", "go"),
    ("cli/cli", "go"),
    ("junegunn/fzf", "go"),
    ("charmbracelet/bubbletea", "go"),
    ("dgraph-io/badger", "go"),
    ("nats-io/nats-server", "go"),
    ("gorilla/websocket", "go"),
    ("valyala/fasthttp", "go"),
    ("hashicorp/raft", "go"),
    ("hashicorp/go-plugin", "go"),
    ("pkg/errors", "go"),
    ("google/uuid", "go"),
    ("coredns/coredns", "go"),
    ("go-kit/kit", "go"),
    ("julienschmidt/httprouter", "go"),
    ("traefik/traefik", "go"),
    # rust
    ("clap-rs/clap", "rust"),
    ("rust-lang/regex", "rust"),
    ("hyperium/hyper", "rust"),
    ("actix/actix-web", "rust"),
    ("diesel-rs/diesel", "rust"),
    ("sharkdp/bat", "rust"),
    ("alacritty/alacritty", "rust"),
    ("nushell/nushell", "rust"),
    ("tokio-rs/tracing", "rust"),
    ("crossbeam-rs/crossbeam", "rust"),
    ("launchbadge/sqlx", "rust"),
    ("dtolnay/syn", "rust"),
    ("dtolnay/thiserror", "rust"),
    ("starship/starship", "rust"),
    ("image-rs/image", "rust"),
    ("servo/rust-url", "rust"),
    ("chronotope/chrono", "rust"),
    ("rust-lang/futures-rs", "rust"),
    ("seanmonstar/warp", "rust"),
    ("rustls/rustls", "rust"),
    ("tauri-apps/tauri", "rust"),
    ("rust-lang/mdBook", "rust"),
    # java
    ("apache/commons-lang", "java"),
    ("FasterXML/jackson-databind", "java"),
    ("mockito/mockito", "java"),
    ("ReactiveX/RxJava", "java"),
    ("netty/netty", "java"),
    ("google/guice", "java"),
    ("projectlombok/lombok", "java"),
    ("JodaOrg/joda-time", "java"),
    ("zxing/zxing", "java"),
    ("apache/commons-collections", "java"),
    ("apache/commons-text", "java"),
    ("OpenFeign/feign", "java"),
    ("resilience4j/resilience4j", "java"),
    ("dropwizard/dropwizard", "java"),
    ("alibaba/fastjson", "java"),
    # c
    ("redis/redis", "c"),
    ("valkey-io/valkey", "c"),
    ("nginx/nginx", "c"),
    ("tmux/tmux", "c"),
    ("h2o/h2o", "c"),
    ("nothings/stb", "c"),
    ("jemalloc/jemalloc", "c"),
    ("raysan5/raylib", "c"),
    ("libevent/libevent", "c"),
    ("json-c/json-c", "c"),
    ("akheron/jansson", "c"),
    ("wren-lang/wren", "c"),
    ("janet-lang/janet", "c"),
    ("microsoft/mimalloc", "c"),
    ("micropython/micropython", "c"),
    ("antirez/sds", "c"),
    ("troydhanson/uthash", "c"),
    # cpp
    ("nlohmann/json", "cpp"),
    ("google/googletest", "cpp"),
    ("abseil/abseil-cpp", "cpp"),
    ("catchorg/Catch2", "cpp"),
    ("ocornut/imgui", "cpp"),
    ("google/benchmark", "cpp"),
    ("CLIUtils/CLI11", "cpp"),
    ("facebook/folly", "cpp"),
    ("taskflow/taskflow", "cpp"),
    ("doctest/doctest", "cpp"),
    ("simdjson/simdjson", "cpp"),
    ("google/flatbuffers", "cpp"),
    ("microsoft/terminal", "cpp"),
    # csharp
    ("AutoMapper/AutoMapper", "csharp"),
    ("jbogard/MediatR", "csharp"),
    ("NLog/NLog", "csharp"),
    ("Humanizr/Humanizer", "csharp"),
    ("xunit/xunit", "csharp"),
    ("nunit/nunit", "csharp"),
    ("moq/moq4", "csharp"),
    ("StackExchange/StackExchange.Redis", "csharp"),
    ("louthy/language-ext", "csharp"),
    ("dotnet/BenchmarkDotNet", "csharp"),
    ("quartznet/quartznet", "csharp"),
    ("spectreconsole/spectre.console", "csharp"),
    ("MassTransit/MassTransit", "csharp"),
    ("ppy/osu", "csharp"),
    ("dotnet/command-line-api", "csharp"),
    # ruby
    ("Homebrew/brew", "ruby"),
    ("rubocop/rubocop", "ruby"),
    ("rspec/rspec-core", "ruby"),
    ("heartcombo/devise", "ruby"),
    ("puma/puma", "ruby"),
    ("hanami/hanami", "ruby"),
    ("dry-rb/dry-validation", "ruby"),
    ("fastlane/fastlane", "ruby"),
    ("rest-client/rest-client", "ruby"),
    ("jnunemaker/httparty", "ruby"),
    ("teamcapybara/capybara", "ruby"),
    ("ruby-i18n/i18n", "ruby"),
    ("Shopify/liquid", "ruby"),
    ("heartcombo/simple_form", "ruby"),
    ("kaminari/kaminari", "ruby"),
    ("activeadmin/activeadmin", "ruby"),
    # php
    ("laravel/framework", "php"),
    ("composer/composer", "php"),
    ("doctrine/orm", "php"),
    ("doctrine/dbal", "php"),
    ("PHPOffice/PhpSpreadsheet", "php"),
    ("briannesbitt/Carbon", "php"),
    ("nikic/PHP-Parser", "php"),
    ("filp/whoops", "php"),
    ("twigphp/Twig", "php"),
    ("sebastianbergmann/phpunit", "php"),
    ("ramsey/uuid", "php"),
    ("Respect/Validation", "php"),
    ("cakephp/cakephp", "php"),
    ("yiisoft/yii2", "php"),
    ("phpstan/phpstan-src", "php"),
    # kotlin
    ("Kotlin/kotlinx.coroutines", "kotlin"),
    ("ktorio/ktor", "kotlin"),
    ("InsertKoinIO/koin", "kotlin"),
    ("square/leakcanary", "kotlin"),
    ("coil-kt/coil", "kotlin"),
    ("JetBrains/Exposed", "kotlin"),
    ("Kotlin/kotlinx.serialization", "kotlin"),
    ("arrow-kt/arrow", "kotlin"),
    ("square/wire", "kotlin"),
    ("detekt/detekt", "kotlin"),
    ("pinterest/ktlint", "kotlin"),
    ("mockk/mockk", "kotlin"),
    ("square/kotlinpoet", "kotlin"),
    ("square/okhttp", "kotlin"),
    # swift
    ("Alamofire/Alamofire", "swift"),
    ("apple/swift-nio", "swift"),
    ("vapor/vapor", "swift"),
    ("ReactiveX/RxSwift", "swift"),
    ("SwiftyJSON/SwiftyJSON", "swift"),
    ("onevcat/Kingfisher", "swift"),
    ("pointfreeco/swift-composable-architecture", "swift"),
    ("apple/swift-argument-parser", "swift"),
    ("SnapKit/SnapKit", "swift"),
    ("Quick/Quick", "swift"),
    ("apple/swift-collections", "swift"),
    ("apple/swift-log", "swift"),
    ("Moya/Moya", "swift"),
    # scala
    ("scala/scala", "scala"),
    ("playframework/playframework", "scala"),
    ("typelevel/cats", "scala"),
    ("http4s/http4s", "scala"),
    ("circe/circe", "scala"),
    ("sbt/sbt", "scala"),
    ("scalameta/scalafmt", "scala"),
    # elixir, lua
    ("elixir-lang/elixir", "elixir"),
    ("phoenixframework/phoenix", "elixir"),
    ("Kong/kong", "lua"),
]
# Other projects' code some repositories carry (path prefixes never mined; folders such as third_party/,
# 3rd-party/, _vendor/ or oss/ are skipped everywhere by mine_pairs.EXTRA_SKIP_DIRS).
EXCLUDE: dict[str, list[str]] = {
    "simdjson/simdjson": ["dependencies/"],
    "apple/swift-nio": ["Sources/CNIOLLHTTP/", "Sources/CNIOSHA1/"],
    "ocornut/imgui": ["imstb_", "examples/libs/"],
    "libevent/libevent": ["wepoll.c", "wepoll.h", "sha1.c", "sha1.h"],
    "micropython/micropython": ["lib/"],
}
# Added repositories held out for the lead's model selection (mined the same way, never trained on).
VALIDATION = frozenset(
    {
        "aio-libs/yarl",
        "mholt/PapaParse",
        "typestack/class-validator",
        "jmoiron/sqlx",
        "servo/rust-url",
        "apache/commons-text",
        "kaminari/kaminari",
        "ramsey/uuid",
        "jbogard/MediatR",
        "akheron/jansson",
    }
)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--out", type=Path, default=mp.HERE / "repos.json")
    parser.add_argument("--reserved", type=Path, default=mp.RESERVED)
    args = parser.parse_args()
    reserved, held = mp.load_reserved(args.reserved), mp.bench_held_out()
    bench = json.loads((mp.ROOT / "bench" / "training_repos.json").read_text())
    wanted = [(s["repo"], s["language"], s["commit"], "train") for s in bench if s["split"] == "train"]
    wanted += [(r, lang, "", "validation" if r in VALIDATION else "train") for r, lang in ADDED]
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for repo, language, commit, split in wanted:
        if repo.lower() in seen:
            continue
        seen.add(repo.lower())
        why = mp.refused(repo, reserved, held)
        git_dir = args.mirrors / mp.slug(repo) / "repo"
        if why is None and not git_dir.is_dir():
            why = "no mirror (not fetched, or over the snapshot size limit)"
        if why is None:
            commit = commit or mp.git(git_dir, "rev-parse", "HEAD").strip()
            licence, files = mp.detect_licence(git_dir, commit)
            if licence is None:
                why = f"no permissive licence in {files or 'no licence file'}"
        if why is not None:
            print(f"left out {repo}: {why}", file=sys.stderr)
            continue
        entry = {"repo": repo, "language": language, "commit": commit, "licence": licence, "split": split}
        if repo in EXCLUDE:
            entry["exclude"] = EXCLUDE[repo]
        out.append(entry)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    splits: dict[str, int] = {}
    for r in out:
        splits[r["split"]] = splits.get(r["split"], 0) + 1
    print(f"{len(out)} repositories {splits} -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
