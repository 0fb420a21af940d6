; The demo house: six rooms, the robot in the hallway, three people, and things to tidy.
(define (problem demo_house)
  (:domain household)
  (:objects
    robot - agent
    hallway kitchen living_room bedroom bathroom laundry_room - room
    sandra omar lena - person
    water juice - liquid
    kitchen_table living_room_table - table
    bookshelf - shelf
    kitchen_counter - counter
    living_room_sofa - sofa
    bedroom_bed - bed
    kitchen_fridge - fridge
    kitchen_cabinet - cabinet
    nightstand_drawer - drawer
    laundry_basket - laundrybasket
    laundry_washer - washer
    laundry_dryer - dryer
    kitchen_sink bathroom_sink - sink
    hallway_light kitchen_light living_room_light bedroom_light bathroom_light laundry_room_light - light
    living_room_tv - tv
    kitchen_faucet bathroom_faucet - faucet
    kitchen_stove - stove
    living_room_window bedroom_window - window
    apple milk_carton - food
    plate bowl - dish
    red_mug blue_mug - cup
    sandra_jeans omar_shirt lena_socks - cloth
    sandra_phone omar_phone - phone
    dune_book - book
    tv_remote - remote
  )
  (:init
    (agent_at robot hallway)
    (connected hallway kitchen) (connected kitchen hallway)
    (connected hallway living_room) (connected living_room hallway)
    (connected hallway bedroom) (connected bedroom hallway)
    (connected hallway bathroom) (connected bathroom hallway)
    (connected kitchen laundry_room) (connected laundry_room kitchen)
    (person_at sandra living_room) (person_at omar kitchen) (person_at lena bedroom)
    (in_room kitchen_table kitchen) (in_room kitchen_counter kitchen) (in_room kitchen_fridge kitchen)
    (in_room kitchen_cabinet kitchen) (in_room kitchen_sink kitchen) (in_room kitchen_faucet kitchen)
    (in_room kitchen_stove kitchen) (in_room kitchen_light kitchen)
    (in_room living_room_table living_room) (in_room bookshelf living_room) (in_room living_room_sofa living_room)
    (in_room living_room_tv living_room) (in_room living_room_light living_room)
    (in_room living_room_window living_room)
    (in_room bedroom_bed bedroom) (in_room nightstand_drawer bedroom) (in_room bedroom_light bedroom)
    (in_room bedroom_window bedroom)
    (in_room bathroom_sink bathroom) (in_room bathroom_faucet bathroom) (in_room bathroom_light bathroom)
    (in_room laundry_basket laundry_room) (in_room laundry_washer laundry_room) (in_room laundry_dryer laundry_room)
    (in_room laundry_room_light laundry_room) (in_room hallway_light hallway)
    (closed kitchen_fridge) (closed kitchen_cabinet) (closed nightstand_drawer) (closed laundry_washer) (closed laundry_dryer)
    (inside milk_carton kitchen_fridge) (on apple kitchen_counter)
    (inside plate kitchen_sink) (on bowl kitchen_table)
    (on red_mug living_room_table) (cup_contains red_mug juice)
    (inside blue_mug kitchen_cabinet) (cup_empty blue_mug) (clean blue_mug) (clean bowl)
    (inside sandra_jeans laundry_basket) (inside omar_shirt laundry_basket) (dry omar_shirt)
    (on lena_socks bedroom_bed) (clean lena_socks) (dry lena_socks) (dry sandra_jeans)
    (on sandra_phone living_room_sofa) (phone_ringing sandra_phone) (held_by omar_phone omar)
    (on dune_book bookshelf) (on tv_remote living_room_sofa)
    (switched_on kitchen_light) (switched_on living_room_light) (switched_on living_room_tv)
    (switched_on bathroom_faucet) (window_open bedroom_window)
  )
)
