/* cmd_data.c: supkit-data, the data tool: train-tokenizer, tokenize, encode,
 * decode, stats, overlap, batches, brown, import-tokenizer (docs/data.md;
 * supkit-formats(5); man/supkit-data.1). Each subcommand is in its own
 * data/sub_*.c; their shared options are in data_args.c. */
#include "lib/cli.h"
#include "data/data_args.h"

static const struct cli_sub subs[] = {
	{"train-tokenizer", data_train_tokenizer_main, "train a byte-level BPE tokenizer on corpus files"},
	{"tokenize", data_tokenize_main, "encode corpus files into train and validation token shards"},
	{"encode", data_encode_main, "encode one text file to token ids"},
	{"decode", data_decode_main, "decode token ids back to bytes"},
	{"stats", data_stats_main, "tokens, documents and bytes per token of shards"},
	{"overlap", data_overlap_main, "leakage check: duplicate documents and shared n-grams"},
	{"batches", data_batches_main, "export the trainer's token stream (its loader's batches)"},
	{"brown", data_brown_main, "turn the tagged Brown corpus into plain text"},
	{"import-tokenizer", data_import_tokenizer_main, "autoresearch's tokenizer.pkl to a tokenizer folder"},
	{NULL, NULL, NULL},
};

int main(int argc, char **argv)
{
	return cli_dispatch(argc, argv, "data", "a data", subs);
}
