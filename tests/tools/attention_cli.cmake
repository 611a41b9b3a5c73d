# `tessel plan attention` (tools/tessel/attention_commands.cpp): the plan's numbers as one line of
# JSON, the library's one-line print with --format table, and the errors as one sentence.
tessel_cli_test(plan_attention_gpt2 "plan|attention|--batch|4|--heads|12|--seq-len|256|--head-dim|64"
  STDOUT "{\"batch\": 4, \"dtype\": \"f32\", \"head_dim\": 64, \"heads\": 12, \"kv_tile\": 64, \"num_kv_tiles\": 4, \"num_q_tiles\": 4, \"q_tile\": 64, \"scratch_bytes\": 49152, \"seq_len\": 256, \"tile_budget\": 65536, \"tile_bytes\": 65536}")
tessel_cli_test(plan_attention_tight_budget "plan|attention|--batch|1|--heads|2|--seq-len|37|--head-dim|8|--dtype|f64|--budget|8192"
  STDOUT "{\"batch\": 1, \"dtype\": \"f64\", \"head_dim\": 8, \"heads\": 2, \"kv_tile\": 16, \"num_kv_tiles\": 3, \"num_q_tiles\": 2, \"q_tile\": 32, \"scratch_bytes\": 768, \"seq_len\": 37, \"tile_budget\": 8192, \"tile_bytes\": 8192}")
tessel_cli_test(plan_attention_table "plan|attention|--batch|4|--heads|12|--seq-len|256|--head-dim|64|--format|table"
  STDOUT "attention plan: B 4, 12 heads, T 256, head_dim 64, f32; 4 query tiles of 64 rows, 4 key/value tiles of 64 rows; 65536 bytes a tile, backward scratch 49152 bytes")
tessel_cli_test(plan_attention_bf16 "plan|attention|--batch|4|--heads|12|--seq-len|64|--head-dim|64|--dtype|bf16"
  STDERR "^tessel: --dtype: attention computes on f32 or f64, not bf16\\.\n$")
tessel_cli_test(plan_attention_zero_heads "plan|attention|--batch|4|--heads|0|--seq-len|64|--head-dim|64"
  STDERR "^tessel: an attention plan needs a head count >= 1, got 0\\.\n$")
tessel_cli_test(plan_attention_budget_too_small "plan|attention|--batch|4|--heads|12|--seq-len|64|--head-dim|64|--budget|100"
  STDERR "^tessel: an attention tile of 16 x 16 rows at head_dim 64 needs 13312 bytes, more than the tile budget of 100 bytes\\.\n$")
tessel_cli_test(plan_attention_missing_head_dim "plan|attention|--batch|4|--heads|12|--seq-len|64"
  STDERR "^tessel: --head-dim is required; see tessel plan attention --help\\.\n$")
tessel_cli_test(plan_attention_bad_format "plan|attention|--batch|4|--heads|12|--seq-len|64|--head-dim|64|--format|yaml"
  STDERR "^tessel: --format must be json or table, got \"yaml\"\\.\n$")
tessel_cli_test(plan_attention_help "plan|attention|--help" STDOUT_MATCH "--seq-len.*--head-dim.*--budget.*--format")
