# cmake -DOUT=file.cpp -DNAMESPACE=ns -DASSETS="sym=path|..." -P EmbedAssets.cmake
# Writes a C++ file defining `extern const char* const sym` for each asset, its text verbatim.
set(body "// Generated from reports/assets by cmake/EmbedAssets.cmake; edit the assets, not this.\nnamespace ${NAMESPACE} {\n")
string(REPLACE "|" ";" ASSETS "${ASSETS}")
foreach(pair IN LISTS ASSETS)
  string(REPLACE "=" ";" kv "${pair}")
  list(GET kv 0 sym)
  list(GET kv 1 path)
  file(READ "${path}" text)
  string(APPEND body "extern const char* const ${sym};\nconst char* const ${sym} = R\"gnnprof_asset(${text})gnnprof_asset\";\n")
endforeach()
string(APPEND body "}  // namespace ${NAMESPACE}\n")
file(WRITE "${OUT}.tmp" "${body}")
file(RENAME "${OUT}.tmp" "${OUT}")
