# Sourced by the GPU machine's scripts before each `cmake --build` in build/.
#
# A warm GPU machine keeps build/ between calls, and each call's copy of the tree keeps this
# machine's file times. A source whose content went back to an older version (a variant
# applied on the device in one call, the tree copied again in the next) is then older than
# its objects, and ninja silently keeps the other version's code. touch_changed_sources
# touches every file whose content differs from what the previous build in build/ was given,
# then records the current content. So on the device, build only through device_check.sh or
# ab_ncu.sh (both call it), not with a bare `cmake --build`.
touch_changed_sources() {
  local list=build/.source_sha1 now
  now=$(find src include python bench tests tools cmake examples CMakeLists.txt -type f \
          -not -path '*/__pycache__/*' -print0 2> /dev/null | sort -z | xargs -0 -r sha1sum)
  if [ -f "$list" ]; then
    # Lines only in the new list: files added or changed since that build.
    diff "$list" <(printf '%s\n' "$now") | awk '/^> /{print $3}' | xargs -r touch
  fi
  mkdir -p build && printf '%s\n' "$now" > "$list"
  # Any build invalidates ab_ncu's stamp of a variant's build (apply_built_variant.sh):
  # ab_ncu writes it again after this, right before building that variant.
  rm -f build/.ab_variant_built
}
