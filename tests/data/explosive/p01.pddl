(define (problem wide30) (:domain wide)
  (:objects t0 t1 t2 t3 t4 t5 t6 t7 t8 t9 t10 t11 t12 t13 t14 t15 t16 t17 t18 t19 t20 t21 t22 t23 t24 t25 t26 t27 t28 t29 - thing)
  (:init (ok t0) (ok t1) (ok t2) (ok t3) (ok t4) (ok t5) (ok t6) (ok t7) (ok t8) (ok t9) (ok t10) (ok t11) (ok t12) (ok t13) (ok t14) (ok t15) (ok t16) (ok t17) (ok t18) (ok t19) (ok t20) (ok t21) (ok t22) (ok t23) (ok t24) (ok t25) (ok t26) (ok t27) (ok t28) (ok t29))
  (:goal (done)))
