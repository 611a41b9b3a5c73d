// Times llm.c's CPU training step (karpathy/llm.c train_gpt2.c) at a chosen B and T.
//
// train_gpt2.c's own main fixes B 4 and T 64 and interleaves its 41 steps with validation and
// sampling. This driver compiles train_gpt2.c with TESTING defined, which removes its main (the
// way llm.c's test_gpt2.c uses it), and runs exactly the body of its training loop: next batch,
// gpt2_forward, gpt2_zero_grad, gpt2_backward, gpt2_update(1e-4, 0.9, 0.999, 1e-8, 0), timed
// with the same clock around the same calls, printing the same line with more digits of loss.
// Batches come from llm.c's own DataLoader, unshuffled, so batch i is tokens
// [i*B*T, (i+1)*B*T] of the shard, the batch compare.py gives PyTorch at step i.
//
//   llmc_step CHECKPOINT TOKENS B T STEPS [GRADS_OUT]
//
// With GRADS_OUT, the first step's parameter gradients (after gpt2_backward, before the update)
// are written there in the checkpoint's format (its header, then float32 in its order and
// layouts), for compare.py's gradient check; that step's time then includes the write.
//
// Built by compare.py from the llm.c sources in build/ (never copied into the repository), with
// the flags llm.c's Makefile uses for train_gpt2.
#define TESTING
#include "train_gpt2.c"

// The checkpoint's header (gpt2_build_from_checkpoint reads it) followed by the gradients.
static void write_gradients(const GPT2* model, const char* path) {
    int header[256] = {20240326, 3, model->config.max_seq_len, model->config.vocab_size,
                       model->config.num_layers, model->config.num_heads, model->config.channels,
                       model->config.padded_vocab_size};
    FILE* f = fopenCheck(path, "wb");
    fwriteCheck(header, sizeof(int), 256, f);
    fwriteCheck(model->grads_memory, sizeof(float), model->num_parameters, f);
    fcloseCheck(f);
}

int main(int argc, char** argv) {
    if (argc != 6 && argc != 7) {
        fprintf(stderr, "usage: %s CHECKPOINT TOKENS B T STEPS [GRADS_OUT]\n", argv[0]);
        return 2;
    }
    const int B = atoi(argv[3]);
    const int T = atoi(argv[4]);
    const int steps = atoi(argv[5]);

    GPT2 model;
    gpt2_build_from_checkpoint(&model, argv[1]);
    if (T > model.config.max_seq_len) {
        fprintf(stderr, "T %d exceeds the checkpoint's max_seq_len %d\n", T, model.config.max_seq_len);
        return 2;
    }
    DataLoader loader;
    dataloader_init(&loader, argv[2], B, T, 0, 1, 0);
    printf("threads: %d\n", omp_get_max_threads());

    struct timespec start, end;
    for (int step = 0; step < steps; step++) {
        clock_gettime(CLOCK_MONOTONIC, &start);
        dataloader_next_batch(&loader);
        gpt2_forward(&model, loader.inputs, loader.targets, B, T);
        gpt2_zero_grad(&model);
        gpt2_backward(&model);
        if (step == 0 && argc == 7) {
            write_gradients(&model, argv[6]);
        }
        gpt2_update(&model, 1e-4f, 0.9f, 0.999f, 1e-8f, 0.0f, step + 1);
        clock_gettime(CLOCK_MONOTONIC, &end);
        double elapsed_s = (end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) / 1e9;
        printf("step %d: train loss %.9g (took %f ms)\n", step, model.mean_loss, elapsed_s * 1000);
        fflush(stdout);
    }
    dataloader_free(&loader);
    gpt2_free(&model);
    return 0;
}
