#!/usr/bin/env bash
# Fetch the JVM jars of one or more tiers (profiles of jars/pom.xml) into a cache folder,
# check every jar against jars/SHA256SUMS, and print their paths (one per line, or one
# classpath line with --classpath, or Spark's comma-separated `spark.jars` with --comma).
#
#   scripts/fetch-jars.sh s3a                      # paths, fetching only when needed
#   scripts/fetch-jars.sh --classpath kafka-broker # for `java -cp`
#   scripts/fetch-jars.sh --update-checksums s3a   # after changing a tier's pins: refetch
#                                                  # and rewrite its lines in SHA256SUMS
#
# The cache (${HEADWATER_JAR_CACHE:-~/.cache/headwater/jars}/<tier>/) is reused without any
# Maven call when it holds exactly the tier's listed jars with the listed checksums; a jar
# whose checksum differs is refused, whether it came from the cache or from Maven. Maven is
# installed from Debian when `mvn` is missing (as setup.sh does for Java).
set -euo pipefail
export LC_ALL=C
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
POM="$ROOT/jars/pom.xml"
SUMS="$ROOT/jars/SHA256SUMS"
CACHE="${HEADWATER_JAR_CACHE:-$HOME/.cache/headwater/jars}"

die() { echo "fetch-jars: $*" >&2; exit 1; }

FORMAT=lines UPDATE=""
TIERS=()
for arg in "$@"; do
  case "$arg" in
    --classpath) FORMAT=classpath ;;
    --comma) FORMAT=comma ;;
    --update-checksums) UPDATE=1 ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $arg (see --help)" ;;
    *) TIERS+=("$arg") ;;
  esac
done
[ ${#TIERS[@]} -gt 0 ] || die "name at least one tier: $(grep -o '<id>[^<]*</id>' "$POM" | sed 's/<[^>]*>//g' | paste -sd' ')"

# The tier's lines of SHA256SUMS ("<sha256>  <tier>/<jar>"), sorted.
tier_sums() { grep -E "^[0-9a-f]{64}  $1/[^/]+\.jar$" "$SUMS" | sort -k2 || true; }

# What the tier's folder holds now: one "<name> <size> <mtime> <inode>" line per jar. A
# verified cache records this next to the checksums it was verified against, so a warm
# call re-reads no jar; any change to a jar (or a copy of the folder) verifies again.
tier_state() { (cd "$1" && stat -c '%n %s %y %i' -- *.jar 2>/dev/null | sort) || true; }

# Check a folder of jars against the tier's listed checksums; one line naming the first
# jar that is missing, unlisted or different.
verify() {
  local tier=$1 dir=$2 want have sum name
  want="$(tier_sums "$tier" | sed "s|  $tier/|  |")"
  have="$(cd "$dir" && ls -1 -- *.jar 2>/dev/null | sort || true)"
  for name in $have; do
    grep -qE "  ${name//./\\.}\$" <<<"$want" \
      || die "$tier/$name is not listed in jars/SHA256SUMS (refused); if jars/pom.xml changed on purpose, run: scripts/fetch-jars.sh --update-checksums $tier"
  done
  while read -r sum name; do
    [ -f "$dir/$name" ] || die "$tier/$name is listed in jars/SHA256SUMS but was not fetched; check jars/pom.xml's $tier profile"
    [ "$(sha256sum "$dir/$name" | cut -d' ' -f1)" = "$sum" ] \
      || die "$tier/$name does not match its checksum in jars/SHA256SUMS (refused); delete $dir to fetch it again"
  done <<<"$want"
}

ensure_mvn() {
  command -v mvn >/dev/null 2>&1 && return
  command -v apt-get >/dev/null 2>&1 || die "mvn is missing and there is no apt-get to install it; install Maven 3"
  echo "== installing Maven (maven)" >&2
  bash "$ROOT/scripts/apt-install.sh" maven >&2
}

# Resolve the tier's profile with Maven into a fresh folder next to the cache.
mvn_fetch() {
  local tier=$1 out=$2
  ensure_mvn
  rm -rf "$out"
  echo "== fetching the $tier jars with Maven" >&2
  # Maven's output is shown only when it fails (quiet Maven still writes colour codes).
  if ! mvn -q -B -Dstyle.color=never -f "$POM" -P"$tier" dependency:copy-dependencies \
      -DoutputDirectory="$out" > "$out.log" 2>&1; then
    cat "$out.log" >&2; rm -f "$out.log"
    die "Maven could not fetch the $tier jars (its output is above); is Maven Central reachable?"
  fi
  rm -f "$out.log"
}

fetch_tier() {
  local tier=$1 dir="$CACHE/$1" stamp="$CACHE/$1/.verified" want tmp
  grep -q "<id>$tier</id>" "$POM" || die "no tier '$tier' in jars/pom.xml"
  # One fetch of a tier at a time (parallel test workers start together on a cold cache).
  mkdir -p "$CACHE"
  exec 8>"$CACHE/.$tier.lock"
  flock 8
  want="$(tier_sums "$tier")"
  if [ -n "$UPDATE" ]; then
    tmp="$CACHE/.$tier.update.$$"
    mvn_fetch "$tier" "$tmp"
    { grep -vE "^[0-9a-f]{64}  $tier/" "$SUMS" 2>/dev/null || true
      (cd "$tmp" && sha256sum -- *.jar | sed "s|  |  $tier/|"); } | sort -k2 > "$SUMS.new"
    mv "$SUMS.new" "$SUMS"
    rm -rf "$dir" && mv "$tmp" "$dir"
    want="$(tier_sums "$tier")"
  fi
  [ -n "$want" ] || die "jars/SHA256SUMS lists no jar of tier '$tier'; run: scripts/fetch-jars.sh --update-checksums $tier"
  if [ -d "$dir" ] && [ "$(tier_state "$dir" | cut -d' ' -f1)" = "$(sed 's|.*  [^/]*/||' <<<"$want" | sort)" ]; then
    # Complete: verify (unless this exact state was verified before) and use it.
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want"$'\n'"$(tier_state "$dir")" ]; then
      verify "$tier" "$dir"
      printf '%s\n%s' "$want" "$(tier_state "$dir")" > "$stamp"
    fi
    flock -u 8
    return
  fi
  tmp="$CACHE/.$tier.fetch.$$"
  trap 'rm -rf "$tmp"' EXIT
  mvn_fetch "$tier" "$tmp"
  verify "$tier" "$tmp"
  rm -rf "$dir" && mv "$tmp" "$dir"
  trap - EXIT
  printf '%s\n%s' "$want" "$(tier_state "$dir")" > "$stamp"
  flock -u 8
}

PATHS=()
for tier in "${TIERS[@]}"; do
  fetch_tier "$tier"
  while read -r _ rel; do PATHS+=("$CACHE/$rel"); done <<<"$(tier_sums "$tier")"
done
case "$FORMAT" in
  lines) printf '%s\n' "${PATHS[@]}" ;;
  classpath) (IFS=:; echo "${PATHS[*]}") ;;
  comma) (IFS=,; echo "${PATHS[*]}") ;;
esac
