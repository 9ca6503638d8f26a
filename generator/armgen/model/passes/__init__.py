"""armgen's own graph passes, one per file, where ExecuTorch 1.5.1 lacks one (ExecuTorch's own are
preferred); :mod:`armgen.model.passes.order` says at which stage and in what order each runs:

    conv1d_to_conv2d                  1-D convolution regions as unit-height 2-D ones, so CMSIS-NN's
                                      int8 kernels take them (before quantization)
    single_channel_depthwise_to_conv  one-input-channel depthwise convolutions as regular ones on cores
                                      without MVE (after upstream's Cortex-M passes)
    remove_noop_pad                   no cortex_m::pad that pads nothing (a whole-tensor copy)
    strided_conv_width_to_channels    a strided convolution over few channels reads f neighbouring
                                      pixels as one (f times fewer im2col copies)
    fold_pad_into_conv                explicit zero pads folded into the next convolution
    before_planning                   runs the two above on the tensor specs of the program to emit,
                                      just before ExecuTorch's memory planning
    order                             the order of every pass, stage by stage: the compile stage runs
                                      its lists (add a pass there)
"""
