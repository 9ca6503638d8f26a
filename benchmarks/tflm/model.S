/* Embeds the .tflite file named by TFLM_MODEL_PATH (read in place, 16-byte aligned). */
  .section .armgen_model, "a"
  .balign 16
  .global tflm_model
tflm_model:
  .incbin TFLM_MODEL_PATH
  .global tflm_model_end
tflm_model_end:
